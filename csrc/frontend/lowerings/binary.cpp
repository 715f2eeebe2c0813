// The aten ops that are functions of ir/binary_functions.h (one line each),
// and the ops built from them: where, masked_fill, the isnan family,
// logical_not and bitwise_not, the bit shifts, prelu, and clamp with tensor
// bounds.

#include "common/check.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"
#include "ir/binary_functions.h"

#include <cmath>
#include <limits>
#include <string_view>

namespace popsim::frontend::lowerings {
namespace {

struct AtenBinary {
  const char* op; // also registered with a trailing "_" (the in-place form)
  const char* function;
};

const std::vector<AtenBinary>& atenBinaryOps() {
  static const std::vector<AtenBinary> ops = {
      {"aten::eq", "eq"},
      {"aten::ne", "ne"},
      {"aten::not_equal", "ne"},
      {"aten::lt", "lt"},
      {"aten::less", "lt"},
      {"aten::le", "le"},
      {"aten::less_equal", "le"},
      {"aten::gt", "gt"},
      {"aten::greater", "gt"},
      {"aten::ge", "ge"},
      {"aten::greater_equal", "ge"},
      {"aten::maximum", "maximum"},
      {"aten::minimum", "minimum"},
      {"aten::fmax", "fmax"},
      {"aten::fmin", "fmin"},
      {"aten::remainder", "remainder"},
      {"aten::fmod", "fmod"},
      {"aten::atan2", "atan2"},
      {"aten::arctan2", "atan2"},
      {"aten::logaddexp", "logaddexp"},
      {"aten::hypot", "hypot"},
      {"aten::copysign", "copysign"},
      {"aten::xlogy", "xlogy"},
      {"aten::special_xlogy", "xlogy"},
      {"aten::special_xlog1py", "xlog1py"},
      {"aten::logical_and", "logical_and"},
      {"aten::logical_or", "logical_or"},
      {"aten::logical_xor", "logical_xor"},
      {"aten::gcd", "gcd"},
      {"aten::lcm", "lcm"},
      {"aten::bitwise_and", "bitwise_and"},
      {"aten::bitwise_or", "bitwise_or"},
      {"aten::bitwise_xor", "bitwise_xor"},
  };
  return ops;
}

// The Python operators' aten names: a & b, a | b, a ^ b and their in-place forms.
const std::vector<AtenBinary>& atenOperatorOps() {
  static const std::vector<AtenBinary> ops = {
      {"aten::__and__", "bitwise_and"}, {"aten::__or__", "bitwise_or"},
      {"aten::__xor__", "bitwise_xor"}, {"aten::__iand__", "bitwise_and"},
      {"aten::__ior__", "bitwise_or"},  {"aten::__ixor__", "bitwise_xor"},
  };
  return ops;
}

const char* functionOf(const std::string& opName) {
  const std::string name = endsInPlace(opName) ? opName.substr(0, opName.size() - 1) : opName;
  for (const auto* table : {&atenBinaryOps(), &atenOperatorOps()}) {
    for (const AtenBinary& op : *table) {
      if (name == op.op) return op.function;
    }
  }
  POPSIM_ASSERT(false, opName, " is not in the binary lowering table.");
}

void lowerTableOp(LoweringContext& ctx) {
  ctx.setOutput(0, inPlaceResult(ctx, emitBinaryFunction(ctx, functionOf(ctx.opName()), 0, 1)));
}

// floor_divide: div_floor, which PyTorch cannot differentiate (its
// backward raises), where div(rounding_mode="floor") has a zero gradient.
void lowerFloorDivide(LoweringContext& ctx) {
  ir::Value* quotient = ctx.emit(
      ir::OpKind::NoDerivative, {emitBinaryFunction(ctx, "div_floor", 0, 1)},
      {{"what", std::string("floor_divide")},
       {"hint", std::string("Use torch.div(a, b, rounding_mode='floor'), whose gradient is "
                            "zero, or detach its input.")}});
  ctx.setOutput(0, inPlaceResult(ctx, quotient));
}

// x compared with a number of its own dtype.
ir::Value* compare(LoweringContext& ctx, const char* function, ir::Value* x, double number) {
  return emitBinary(ctx, function, x, constantFilled(ctx, {x->type().dtype, {}}, number));
}

// where(condition, a, b); where(condition) alone is nonzero.
void lowerWhere(LoweringContext& ctx) {
  if (ctx.numInputs() == 1) {
    ctx.unsupported("torch.where(condition) with one argument (its output shape depends on "
                    "the data); use torch.where(condition, a, b)");
  }
  const ir::DType dtype = promotedDType(ctx, {1, 2});
  ir::Value* condition = castTo(ctx, ctx.tensor(0), ir::DType::Bool);
  ctx.setOutput(0, ctx.emit(ir::OpKind::Where,
                            {condition, operandAs(ctx, 1, dtype), operandAs(ctx, 2, dtype)}));
}

// masked_fill(self, mask, value): value (a number or 0-d tensor) where mask.
void lowerMaskedFill(LoweringContext& ctx) {
  ir::Value* self = ctx.tensor(0);
  if (ctx.isTensor(2) && ctx.tensor(2)->type().rank() != 0) {
    ctx.unsupported("masked_fill with a value of " + ctx.tensor(2)->type().str() +
                    " (it takes a number or a 0-d tensor)");
  }
  ir::Value* mask = castTo(ctx, ctx.tensor(1), ir::DType::Bool);
  ir::Value* value = operandAs(ctx, 2, self->type().dtype);
  ctx.setOutput(0, ctx.emit(ir::OpKind::Where, {mask, value, self}));
}

// prelu(self, weight): one weight, or one per channel (dimension 1),
// broadcast over the other dimensions.
void lowerPrelu(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* weight = floatTensor(ctx, 1);
  const int64_t rank = x->type().rank();
  const int64_t count = weight->type().numel();
  if (count != 1) {
    if (rank < 2 || x->type().shape[1] != count) {
      ctx.unsupported("prelu with " + std::to_string(count) + " weights for an input of " +
                      x->type().str() + " (it takes one weight, or one per channel: dimension 1)");
    }
    weight = reshape(ctx, weight, [&] {
      ir::Shape shape(static_cast<size_t>(rank - 1), 1);
      shape[0] = count;
      return shape;
    }());
  } else {
    weight = reshape(ctx, weight, {});
  }
  ctx.setOutput(0, emitBinary(ctx, "prelu", x, weight));
}

enum class Test { NaN, Inf, PosInf, NegInf, Finite };

// isnan, isinf, isposinf, isneginf and isfinite as comparisons; integer
// and bool tensors are always finite.
template <Test T> void lowerFloatTest(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (!ir::isFloat(x->type().dtype)) {
    ctx.setOutput(0, constantFilled(ctx, {ir::DType::Bool, x->type().shape}, T == Test::Finite));
    return;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ir::Value* magnitude = T == Test::Inf || T == Test::Finite ? ctx.emit(ir::OpKind::Abs, {x}) : x;
  switch (T) {
  case Test::NaN: ctx.setOutput(0, emitBinary(ctx, "ne", x, x)); return;
  case Test::Inf:
  case Test::PosInf: ctx.setOutput(0, compare(ctx, "eq", magnitude, kInf)); return;
  case Test::NegInf: ctx.setOutput(0, compare(ctx, "eq", x, -kInf)); return;
  case Test::Finite: ctx.setOutput(0, compare(ctx, "lt", magnitude, kInf)); return;
  }
}

// signbit: whether x's sign bit is set (-0.0 and a negative NaN included), as
// copysign(1, x) < 0; integers are negative or not; bools never are.
void lowerSignbit(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::DType dtype = x->type().dtype;
  if (dtype == ir::DType::Bool) {
    ctx.setOutput(0, constantFilled(ctx, {ir::DType::Bool, x->type().shape}, false));
  } else if (!ir::isFloat(dtype)) {
    ctx.setOutput(0, compare(ctx, "lt", x, 0.0));
  } else {
    ir::Value* one = constantFilled(ctx, {dtype, {}}, 1.0);
    ctx.setOutput(0, compare(ctx, "lt", emitBinary(ctx, "copysign", one, x), 0.0));
  }
}

void lowerLogicalNot(LoweringContext& ctx) {
  ctx.setOutput(0, inPlaceResult(ctx, compare(ctx, "eq", ctx.tensor(0), 0.0)));
}

// ~x: logical not of bools, -x - 1 (two's complement) of integers.
void lowerBitwiseNot(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  switch (x->type().dtype) {
  case ir::DType::Bool: ctx.setOutput(0, compare(ctx, "eq", x, 0.0)); return;
  case ir::DType::Int32:
  case ir::DType::Int64: ctx.setOutput(0, affine(ctx, x, -1.0, -1.0)); return;
  default:
    ctx.unsupported("bitwise_not of a " + x->type().str() +
                    " tensor (it takes integer and bool tensors)");
  }
}

// isclose(self, other, rtol, atol, equal_nan) as PyTorch computes it: equal,
// or (with equal_nan) both NaN, or a finite difference within atol + |rtol *
// other|. Integer and bool operands compare in their promoted dtype.
void lowerIsClose(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* a = operandAs(ctx, 0, dtype);
  ir::Value* b = operandAs(ctx, 1, dtype);
  const double rtol = ctx.toDouble(2);
  const double atol = ctx.toDouble(3);
  ir::Value* close = emitBinary(ctx, "eq", a, b);
  if (ctx.toBool(4) && ir::isFloat(dtype)) {
    ir::Value* bothNaN =
        emitBinary(ctx, "logical_and", emitBinary(ctx, "ne", a, a), emitBinary(ctx, "ne", b, b));
    close = emitBinary(ctx, "logical_or", close, bothNaN);
  }
  if (rtol == 0.0 && atol == 0.0) {
    ctx.setOutput(0, close);
    return;
  }
  const ir::DType computed = ir::isFloat(dtype) ? dtype : ir::DType::Float32;
  a = castTo(ctx, a, computed);
  b = castTo(ctx, b, computed);
  ir::Value* allowed =
      affine(ctx, ctx.emit(ir::OpKind::Abs, {affine(ctx, b, rtol, 0.0)}), 1.0, atol);
  ir::Value* actual = ctx.emit(ir::OpKind::Abs, {emitBinary(ctx, "sub", a, b)});
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ir::Value* within = emitBinary(ctx, "logical_and", compare(ctx, "lt", actual, kInf),
                                 emitBinary(ctx, "le", actual, allowed));
  ctx.setOutput(0, emitBinary(ctx, "logical_or", close, within));
}

// isin(elements, test_elements, assume_unique, invert): whether each element
// equals one of the test elements (a tensor or a number, either side), or
// with invert whether it equals none, compared in their promoted dtype.
void lowerIsIn(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* elements = operandAs(ctx, 0, dtype);
  ir::Value* tests = operandAs(ctx, 1, dtype);
  const ir::Shape shape = elements->type().shape;
  ir::Shape column = shape;
  column.push_back(1);
  ir::Value* equal = emitBinary(ctx, "eq", reshape(ctx, elements, column),
                                reshape(ctx, tests, {tests->type().numel()}));
  ir::Value* found = reduceExtremum(ctx, castTo(ctx, equal, ir::DType::Float32),
                                    {static_cast<int64_t>(shape.size())}, false, true, "split");
  found = castTo(ctx, found, ir::DType::Bool);
  const bool invert = ctx.numInputs() > 3 && ctx.toBool(3);
  ctx.setOutput(0, invert ? compare(ctx, "eq", found, 0.0) : found);
}

// logaddexp2(a, b) = log2(2^a + 2^b): logaddexp of the operands scaled by
// ln 2, scaled back (equal infinities give themselves, as in PyTorch).
void lowerLogAddExp2(LoweringContext& ctx) {
  ir::DType dtype = promotedDType(ctx, {0, 1});
  if (!ir::isFloat(dtype)) dtype = ir::DType::Float32;
  const double ln2 = std::log(2.0);
  ir::Value* sum = emitBinary(ctx, "logaddexp", affine(ctx, operandAs(ctx, 0, dtype), ln2, 0.0),
                              affine(ctx, operandAs(ctx, 1, dtype), ln2, 0.0));
  ctx.setOutput(0, affine(ctx, sum, 1.0 / ln2, 0.0));
}

// ldexp(self, other) = self * 2^other, as PyTorch computes it (pow(2, other)
// in other's float dtype, float32 for integers, then the product's promotion).
void lowerLdexp(LoweringContext& ctx) {
  ir::Value* exponent = floatOperand(ctx, 1);
  ir::Value* x = ctx.tensor(0);
  ir::DType dtype = exponent->type().dtype;
  const ir::DType own = x->type().dtype;
  if (ir::isFloat(own) && own != dtype) {
    // The wider float; two of one width (float16 and bfloat16) meet in float32.
    const size_t a = ir::elementSize(own), b = ir::elementSize(dtype);
    dtype = a > b ? own : (b > a ? dtype : ir::DType::Float32);
  }
  ir::Value* powers = castTo(ctx, emitPointwise(ctx, exponent, "rpow", {2.0}), dtype);
  ir::Value* y = ctx.emit(ir::OpKind::Mul, {castTo(ctx, x, dtype), powers});
  if (endsInPlace(ctx.opName())) { // mul_out in PyTorch, which autograd refuses
    y = ctx.emit(ir::OpKind::NoDerivative, {y},
                 {{"what", std::string("ldexp_")},
                  {"hint", std::string("Use x = torch.ldexp(x, e), not in place.")}});
  }
  ctx.setOutput(0, inPlaceResult(ctx, y));
}

// heaviside(input, values): values where input is 0, else whether input is
// positive (NaN is not), in their common dtype; PyTorch has no derivative.
void lowerHeaviside(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* x = operandAs(ctx, 0, dtype);
  ir::Value* positive = castTo(ctx, compare(ctx, "gt", x, 0.0), dtype);
  ir::Value* step =
      ctx.emit(ir::OpKind::Where, {compare(ctx, "eq", x, 0.0), operandAs(ctx, 1, dtype), positive});
  if (ir::isFloat(dtype)) {
    step = ctx.emit(ir::OpKind::NoDerivative, {step},
                    {{"what", std::string("heaviside")},
                     {"hint", std::string("Detach its input, or use a smooth step such as "
                                          "torch.sigmoid(k * x) for a gradient.")}});
  }
  ctx.setOutput(0, inPlaceResult(ctx, step));
}

// bitwise_left_shift / bitwise_right_shift (a << b, a >> b) of integers in
// their promoted dtype: the count taken modulo the bit width, as PyTorch
// 1.13's CPU kernels shift (x86's shifts mask the count, 5 << 70 is
// 5 << 6); a left shift wraps around, a right shift copies the sign bit.
template <bool Left> void lowerShift(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  if (dtype != ir::DType::Int32 && dtype != ir::DType::Int64) {
    ctx.unsupported(std::string(Left ? "a left" : "a right") + " shift of " + ir::dtypeName(dtype) +
                    " tensors (it takes integer tensors)");
  }
  const auto bits = static_cast<double>(ir::elementSize(dtype) * 8);
  ir::Value* count = emitBinary(ctx, "bitwise_and", operandAs(ctx, 1, dtype),
                                constantFilled(ctx, {dtype, {}}, bits - 1.0));
  ir::Value* shifted = emitBinary(ctx, Left ? "bitwise_left_shift" : "bitwise_right_shift",
                                  operandAs(ctx, 0, dtype), count);
  ctx.setOutput(0, inPlaceResult(ctx, shifted));
}

} // namespace

ir::Value* emitBinaryFunction(LoweringContext& ctx, const char* name, size_t left, size_t right) {
  const ir::BinaryFunction* function = ir::findBinaryFunction(name);
  POPSIM_ASSERT(function != nullptr, "no binary function ", name, ".");
  ir::DType dtype = promotedDType(ctx, {left, right});
  if (function->integerValue == nullptr) {
    if (!ir::isFloat(dtype)) dtype = ir::DType::Float32; // integers are computed as floats (atan2)
  } else if (function->value == nullptr && ir::isFloat(dtype)) {
    ctx.unsupported(std::string(name) + " of float tensors (it takes integer and bool tensors)");
  }
  return emitBinary(ctx, name, operandAs(ctx, left, dtype), operandAs(ctx, right, dtype));
}

// clamp(x, min, max) with tensor bounds: clamp_min, then clamp_max, which is
// PyTorch's min(max(x, min), max) with its gradients (x inside the bounds,
// a bound where x is beyond it; NaN propagates and passes none).
ir::Value* clampBetweenTensors(LoweringContext& ctx, std::optional<size_t> low,
                               std::optional<size_t> high) {
  ir::Value* y = floatTensor(ctx, 0);
  const auto bound = [&](size_t index, const char* function) {
    y = emitBinary(ctx, function, y, operandAs(ctx, index, y->type().dtype));
  };
  if (low.has_value()) bound(*low, "clamp_min");
  if (high.has_value()) bound(*high, "clamp_max");
  return y;
}

void registerBinary(LoweringRegistry& registry) {
  for (const AtenBinary& op : atenBinaryOps()) {
    registry.add(op.op, lowerTableOp);
    // torch.special's functions have no in-place forms.
    if (std::string_view(op.op).rfind("aten::special_", 0) != 0) {
      registry.add(std::string(op.op) + "_", lowerTableOp);
    }
  }
  for (const AtenBinary& op : atenOperatorOps()) {
    registry.add(op.op, lowerTableOp);
  }
  registry.add("aten::floor_divide", lowerFloorDivide);
  registry.add("aten::floor_divide_", lowerFloorDivide);
  registry.add("aten::where", lowerWhere);
  registry.add("aten::masked_fill", lowerMaskedFill);
  registry.add("aten::masked_fill_", lowerMaskedFill);
  registry.add("aten::isnan", lowerFloatTest<Test::NaN>);
  registry.add("aten::isinf", lowerFloatTest<Test::Inf>);
  registry.add("aten::isposinf", lowerFloatTest<Test::PosInf>);
  registry.add("aten::isneginf", lowerFloatTest<Test::NegInf>);
  registry.add("aten::isfinite", lowerFloatTest<Test::Finite>);
  registry.add("aten::signbit", lowerSignbit);
  registry.add("aten::logical_not", lowerLogicalNot);
  registry.add("aten::logical_not_", lowerLogicalNot);
  registry.add("aten::bitwise_not", lowerBitwiseNot);
  registry.add("aten::prelu", lowerPrelu);
  registry.add("aten::isclose", lowerIsClose);
  registry.add("aten::isin", lowerIsIn);
  registry.add("aten::logaddexp2", lowerLogAddExp2);
  for (const char* op : {"aten::ldexp", "aten::ldexp_"})
    registry.add(op, lowerLdexp);
  for (const char* op : {"aten::heaviside", "aten::heaviside_"})
    registry.add(op, lowerHeaviside);
  for (const char* op : {"aten::bitwise_left_shift", "aten::bitwise_left_shift_",
                         "aten::__lshift__", "aten::__ilshift__"})
    registry.add(op, lowerShift<true>);
  for (const char* op : {"aten::bitwise_right_shift", "aten::bitwise_right_shift_",
                         "aten::__rshift__", "aten::__irshift__"})
    registry.add(op, lowerShift<false>);
}

} // namespace popsim::frontend::lowerings
