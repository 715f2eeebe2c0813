// PyTorch's type promotion for the operands of elementwise ops.

#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// bool < integers < floats: the category decides whether a 0-d tensor or a
// Python number takes part in promotion.
int category(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::Bool: return 0;
  case ir::DType::Int32:
  case ir::DType::Int64: return 1;
  case ir::DType::Float16:
  case ir::DType::Float32:
  case ir::DType::Float64: return 2;
  }
  return 2;
}

// PyTorch's promoteTypes over the dtypes popsim computes with, which it
// orders bool < int32 < int64 < float16 < float32.
int order(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::Bool: return 0;
  case ir::DType::Int32: return 1;
  case ir::DType::Int64: return 2;
  case ir::DType::Float16: return 3;
  case ir::DType::Float32: return 4;
  case ir::DType::Float64: return 5;
  }
  return 5;
}

std::optional<ir::DType> promote(std::optional<ir::DType> a, ir::DType b) {
  return !a.has_value() || order(b) > order(*a) ? b : *a;
}

} // namespace

ir::DType promotedDType(LoweringContext& ctx, const std::vector<size_t>& operands) {
  std::optional<ir::DType> dimensioned;
  std::optional<ir::DType> zeroDim;
  std::optional<ir::DType> numbers;
  for (size_t index : operands) {
    if (const std::optional<ir::DType> number = ctx.numberDType(index)) {
      numbers = promote(numbers, *number);
      continue;
    }
    const ir::TensorType& type = ctx.tensor(index)->type();
    (type.rank() > 0 ? dimensioned : zeroDim) =
        promote(type.rank() > 0 ? dimensioned : zeroDim, type.dtype);
  }
  std::optional<ir::DType> result = dimensioned;
  for (const std::optional<ir::DType>& weaker : {zeroDim, numbers}) {
    if (weaker.has_value() && (!result.has_value() || category(*weaker) > category(*result))) {
      result = promote(result, *weaker);
    }
  }
  return result.value_or(ir::DType::Float32);
}

std::vector<ir::Value*> withCommonDType(LoweringContext& ctx, std::vector<ir::Value*> tensors) {
  std::optional<ir::DType> common;
  bool half = false;
  for (const ir::Value* t : tensors) {
    common = promote(common, t->type().dtype);
    half = half || t->type().dtype == ir::DType::Float16;
  }
  if (!common.has_value()) return tensors;
  if (half && *common == ir::DType::Float32 && ctx.downcastsMixedFloats()) {
    common = ir::DType::Float16;
  }
  for (ir::Value*& t : tensors)
    t = castTo(ctx, t, *common);
  return tensors;
}

ir::Value* castTo(LoweringContext& ctx, ir::Value* x, ir::DType dtype) {
  if (x->type().dtype == dtype) return x;
  return ctx.emit(ir::OpKind::Cast, {x}, {{"dtype", std::string(ir::dtypeName(dtype))}});
}

ir::Value* operandAs(LoweringContext& ctx, size_t index, ir::DType dtype) {
  if (ctx.numberDType(index).has_value()) {
    return constantFilled(ctx, {dtype, {}}, *ctx.staticScalar(index));
  }
  return castTo(ctx, ctx.tensor(index), dtype);
}

} // namespace popsim::frontend::lowerings
