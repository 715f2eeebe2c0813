#pragma once

#include "common/check.h"
#include "frontend/lowering_context.h"

#include <optional>
#include <string>
#include <vector>

// Building blocks shared by the aten lowerings.
namespace popsim::frontend::lowerings {

// The bool argument called `name`, or `fallback` when the op has none or it is None.
inline bool boolArgument(LoweringContext& context, const char* name, bool fallback = false) {
  const std::optional<size_t> index = context.argumentIndex(name);
  return index.has_value() && !context.isNone(*index) ? context.toBool(*index) : fallback;
}

// A dimension index as PyTorch accepts it (negative counts from the end).
inline int64_t normalizedDim(const LoweringContext& context, int64_t dim, int64_t rank) {
  const int64_t effectiveRank = rank == 0 ? 1 : rank;
  const int64_t normalized = dim < 0 ? dim + effectiveRank : dim;
  if (normalized < 0 || normalized >= effectiveRank) {
    context.unsupported("dimension " + std::to_string(dim) +
                        " is out of range for a tensor of rank " + std::to_string(rank));
  }
  return normalized;
}

inline ir::Value* reshape(LoweringContext& context, ir::Value* x, const ir::Shape& shape) {
  if (x->type().shape == shape) {
    return x;
  }
  return context.emit(ir::OpKind::Reshape, {x}, {{"shape", shape}});
}

inline ir::Value* affine(LoweringContext& context, ir::Value* x, double scale, double shift) {
  if (scale == 1.0 && shift == 0.0) {
    return x;
  }
  return context.emit(ir::OpKind::Affine, {x}, {{"scale", scale}, {"shift", shift}});
}

// x[start:end] along dim (step 1); x itself for the whole dimension.
inline ir::Value* sliceAlong(LoweringContext& context, ir::Value* x, int64_t dim, int64_t start,
                             int64_t end) {
  if (start == 0 && end == x->type().shape[static_cast<size_t>(dim)]) return x;
  return context.emit(ir::OpKind::Slice, {x},
                      {{"dim", dim}, {"start", start}, {"end", end}, {"step", int64_t{1}}});
}

// x raised to at least `rank` dims as atleast_1d / 2d / 3d raise it: a
// scalar to all ones, a vector to a row ([1, n], or [1, n, 1]), a matrix
// to [m, n, 1].
inline ir::Value* atLeastRank(LoweringContext& context, ir::Value* x, size_t rank) {
  ir::Shape shape = x->type().shape;
  if (shape.size() >= rank) return x;
  if (shape.empty()) {
    shape.assign(rank, 1);
  } else if (shape.size() == 1) {
    shape.insert(shape.begin(), 1);
    if (rank == 3) shape.push_back(1);
  } else {
    shape.push_back(1);
  }
  return reshape(context, x, shape);
}

// x broadcast to `shape` (x itself when it has it).
inline ir::Value* broadcastTo(LoweringContext& context, ir::Value* x, const ir::Shape& shape) {
  if (x->type().shape == shape) return x;
  return context.emit(ir::OpKind::Broadcast, {x}, {{"shape", shape}});
}

inline ir::Value* permute(LoweringContext& context, ir::Value* x,
                          const std::vector<int64_t>& perm) {
  return context.emit(ir::OpKind::Permute, {x}, {{"perm", perm}});
}

// Pool/conv arguments given as one value for all spatial dimensions or one per dimension.
inline std::vector<int64_t> pair(const LoweringContext& context, std::vector<int64_t> values,
                                 const std::string& what) {
  if (values.size() == 1) {
    values.push_back(values[0]);
  }
  if (values.size() != 2) {
    context.unsupported(what + " has " + std::to_string(values.size()) +
                        " values; only 2-D operations are supported");
  }
  return values;
}

// Requires a float tensor (float32 or float16): the op computes real numbers only.
inline ir::Value* floatTensor(LoweringContext& context, size_t index) {
  ir::Value* value = context.tensor(index);
  if (!ir::isFloat(value->type().dtype)) {
    context.unsupported("argument " + std::to_string(index) + " is a " + value->type().str() +
                        " tensor; popsim computes this op on float32 or float16 tensors only");
  }
  return value;
}

// PyTorch's result dtype of elementwise operands (promotion.cpp): tensors
// with dimensions decide within a category (bool < integer < float); 0-d
// tensors and then Python numbers only when of a higher category.
ir::DType promotedDType(LoweringContext& ctx, const std::vector<size_t>& operands);
// The operand as a tensor of `dtype`: a number becomes a 0-d constant, a
// tensor of another dtype is cast.
ir::Value* operandAs(LoweringContext& ctx, size_t index, ir::DType dtype);
ir::Value* castTo(LoweringContext& ctx, ir::Value* x, ir::DType dtype);
// x / number for a float x, as eager divides a tensor by a Python number.
ir::Value* divideByNumber(LoweringContext& ctx, ir::Value* x, double number);
// The tensors of a list op (cat, stack) cast to their promoted dtype, as
// PyTorch promotes them (float16 with float32 under FloatDowncastToHalf).
std::vector<ir::Value*> withCommonDType(LoweringContext& ctx, std::vector<ir::Value*> tensors);

// A loss's target that may be an integer tensor (+-1 labels, integer
// regression targets): in the input's dtype, as PyTorch's arithmetic
// promotes it; a float target as it is.
inline ir::Value* targetLike(LoweringContext& context, size_t index, ir::Value* input) {
  ir::Value* target = context.tensor(index);
  if (ir::isFloat(target->type().dtype) || target->type().dtype == ir::DType::Float64) {
    return floatTensor(context, index);
  }
  return castTo(context, target, input->type().dtype);
}

// The tensor at `index` as a float tensor: integer and bool tensors converted
// to float32, as PyTorch converts them for its floating-point functions (exp, sin, ...).
inline ir::Value* floatOperand(LoweringContext& context, size_t index) {
  ir::Value* value = context.tensor(index);
  if (ir::isFloat(value->type().dtype)) return value;
  if (value->type().dtype == ir::DType::Float64) return floatTensor(context, index);
  return castTo(context, value, ir::DType::Float32);
}

// The binary function `name` (ir/binary_functions.h) of two operands, after
// type promotion (binary.cpp).
ir::Value* emitBinaryFunction(LoweringContext& ctx, const char* name, size_t left, size_t right);
// clamp(x, min, max) where a bound is a tensor (binary.cpp).
ir::Value* clampBetweenTensors(LoweringContext& ctx, std::optional<size_t> low,
                               std::optional<size_t> high);

// The max (or min) of x over sorted dims, with the gradient rule `ties`
// ("split", "split_nan" or "first"; ir/ops/extremum.cpp) (extremum.cpp).
ir::Value* reduceExtremum(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& dims,
                          bool keepdim, bool max, const char* ties);

// The p-norm of x over sorted dims (p = 0, p >= 1, +-inf) with PyTorch's
// gradients (norms.cpp).
ir::Value* vectorNormOver(LoweringContext& ctx, ir::Value* x, double p, std::vector<int64_t> dims,
                          bool keepdim);

// Losses (losses.cpp): the reduction argument at `index` ("none", "mean",
// "sum"), a loss reduced by it, and the result marked as the model's loss.
std::string lossReduction(LoweringContext& ctx, size_t index);
ir::Value* reduceLoss(LoweringContext& ctx, ir::Value* value, const std::string& reduction);
void setLoss(LoweringContext& ctx, ir::Value* loss);

// The IR's arithmetic on two values of one dtype (broadcasting), by name.
inline ir::Value* add(LoweringContext& ctx, ir::Value* a, ir::Value* b) {
  return ctx.emit(ir::OpKind::Add, {a, b});
}
inline ir::Value* sub(LoweringContext& ctx, ir::Value* a, ir::Value* b) {
  return ctx.emit(ir::OpKind::Sub, {a, b});
}
inline ir::Value* mul(LoweringContext& ctx, ir::Value* a, ir::Value* b) {
  return ctx.emit(ir::OpKind::Mul, {a, b});
}
inline ir::Value* div(LoweringContext& ctx, ir::Value* a, ir::Value* b) {
  return ctx.emit(ir::OpKind::Div, {a, b});
}

// The pointwise function `function` of x (ir/pointwise_functions.h).
inline ir::Value* emitPointwise(LoweringContext& ctx, ir::Value* x, const char* function,
                                std::vector<double> params = {}) {
  return ctx.emit(ir::OpKind::Pointwise, {x},
                  {{"function", std::string(function)}, {"params", std::move(params)}});
}

// The binary function `function` of two values of one dtype (ir/binary_functions.h).
inline ir::Value* emitBinary(LoweringContext& ctx, const char* function, ir::Value* a,
                             ir::Value* b) {
  return ctx.emit(ir::OpKind::BinaryPointwise, {a, b}, {{"function", std::string(function)}});
}

// An aten op's in-place form: `op_` (not a Python operator's `__op__`).
inline bool endsInPlace(const std::string& opName) {
  return opName.size() > 1 && opName.back() == '_' && opName[opName.size() - 2] != '_';
}

// An in-place form (`op_`, or a Python operator's `__iop__`) writes its
// result back into self, so it keeps self's dtype (x.gt_(y) stays float);
// other ops return `value` as is.
inline ir::Value* inPlaceResult(LoweringContext& ctx, ir::Value* value) {
  const std::string& name = ctx.opName();
  const bool inPlace = endsInPlace(name) || name.rfind("aten::__i", 0) == 0;
  return inPlace ? castTo(ctx, value, ctx.tensor(0)->type().dtype) : value;
}

// A constant of `type` with every element `value` (creation.cpp).
ir::Value* constantFilled(LoweringContext& ctx, const ir::TensorType& type, double value);

// Constants with the given elements (row-major), of `shape` (default 1-D)
// (creation.cpp).
ir::Value* int64Constant(LoweringContext& ctx, const std::vector<int64_t>& values,
                         std::optional<ir::Shape> shape = std::nullopt);
ir::Value* floatConstant(LoweringContext& ctx, const std::vector<float>& values,
                         std::optional<ir::Shape> shape = std::nullopt);

// A float32 tensor of `shape` drawn uniformly from [low, high) with the
// model's random counter, a stream of its own (random.cpp).
ir::Value* uniformDraw(LoweringContext& ctx, double low, double high, const ir::Shape& shape);

// The op's `dtype=` argument, when it has one and it is not None (a dtype
// popsim does not compute with is refused, LoweringContext::toDType).
inline std::optional<ir::DType> dtypeArgument(LoweringContext& ctx) {
  const std::optional<size_t> index = ctx.argumentIndex("dtype");
  if (!index.has_value() || ctx.isNone(*index)) return std::nullopt;
  return ctx.toDType(*index);
}

// A 0-d float32 constant, as an operand that broadcasts.
inline ir::Value* floatScalar(LoweringContext& ctx, double value) {
  return constantFilled(ctx, {ir::DType::Float32, {}}, value);
}

} // namespace popsim::frontend::lowerings
