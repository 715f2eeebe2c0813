#include "common/float16.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cmath>
#include <optional>

namespace popsim::frontend::lowerings {
namespace {

// a op b on integer or bool tensors (after promotion): a whole number on
// one side of an integer tensor is an affine op (counters such as
// num_batches_tracked + 1); otherwise the binary function of that name.
ir::Value* integerArithmetic(LoweringContext& ctx, ir::OpKind kind, size_t left, size_t right,
                             double alpha, ir::DType dtype) {
  const std::optional<double> b = ctx.staticScalar(right);
  const bool wholeNumber = b.has_value() && *b == static_cast<double>(static_cast<int64_t>(*b));
  if (wholeNumber && dtype != ir::DType::Bool && ctx.isTensor(left) &&
      !ctx.numberDType(left).has_value() && ctx.tensor(left)->type().dtype == dtype) {
    ir::Value* x = ctx.tensor(left);
    switch (kind) {
    case ir::OpKind::Add: return affine(ctx, x, 1.0, alpha * *b);
    case ir::OpKind::Sub: return affine(ctx, x, 1.0, -alpha * *b);
    default: return affine(ctx, x, *b, 0.0);
    }
  }
  const char* name = kind == ir::OpKind::Add ? "add" : kind == ir::OpKind::Sub ? "sub" : "mul";
  ir::Value* y = operandAs(ctx, right, dtype);
  if (alpha != 1.0) {
    y = emitBinary(ctx, "mul", y, constantFilled(ctx, {dtype, {}}, alpha));
  }
  return emitBinary(ctx, name, operandAs(ctx, left, dtype), y);
}

// scale * x + number as PyTorch adds it: a number 0.0 (not -0.0) turns -0.0
// into 0.0, so it is added (0 - x subtracts), where an affine op's zero
// shift is none.
ir::Value* addNumber(LoweringContext& ctx, ir::Value* x, double scale, double number) {
  if (number == 0.0 && !std::signbit(number)) {
    ir::Value* zero = constantFilled(ctx, {x->type().dtype, {}}, 0.0);
    return scale == -1.0 ? ctx.emit(ir::OpKind::Sub, {zero, x})
                         : ctx.emit(ir::OpKind::Add, {affine(ctx, x, scale, 0.0), zero});
  }
  return affine(ctx, x, scale, number);
}

} // namespace

// A division, as PopTorch hands it to PopART (aten::div is a Div op whatever
// its divisor) and as eager computes it (x / float(b)): the IPU pays a
// divide, not a multiply. A float16 division by a number float16 cannot hold
// (eager divides by its float32 value) stays a multiply by the reciprocal,
// which rounds closer to eager's than dividing by the float16 number would.
ir::Value* divideByNumber(LoweringContext& ctx, ir::Value* x, double number) {
  const ir::DType dtype = x->type().dtype;
  const auto divisor = static_cast<float>(number);
  if (dtype == ir::DType::Float32 ||
      (dtype == ir::DType::Float16 && (roundToHalf(divisor) == divisor || std::isnan(divisor)))) {
    return ctx.emit(ir::OpKind::Div, {x, constantFilled(ctx, {dtype, {}}, divisor)});
  }
  return affine(ctx, x, 1.0 / number, 0.0);
}

namespace {

// a op b with PyTorch's type promotion. Float results: a number on one side
// becomes an affine op (x * 2, x + 1 ...) or a division by a constant (x / 8), two tensors a
// broadcasting op, and integer tensors are converted (x + int_buffer). Integer results (add, sub,
// mul of integers) are exact; division of integers is true division, in float. `alpha` scales b, as
// in torch.add(a, b, alpha=...).
ir::Value* arithmetic(LoweringContext& ctx, ir::OpKind kind, size_t left, size_t right,
                      double alpha) {
  const ir::DType promoted = promotedDType(ctx, {left, right});
  if (!ir::isFloat(promoted) && kind != ir::OpKind::Div) {
    return integerArithmetic(ctx, kind, left, right, alpha, promoted);
  }
  const ir::DType dtype = ir::isFloat(promoted) ? promoted : ir::DType::Float32;
  const std::optional<double> a = ctx.staticScalar(left);
  const std::optional<double> b = ctx.staticScalar(right);
  if (b.has_value()) {
    ir::Value* x = operandAs(ctx, left, dtype);
    switch (kind) {
    case ir::OpKind::Add: return addNumber(ctx, x, 1.0, alpha * *b);
    case ir::OpKind::Sub: return addNumber(ctx, x, 1.0, -alpha * *b);
    case ir::OpKind::Mul: return affine(ctx, x, *b, 0.0);
    default: return divideByNumber(ctx, x, *b);
    }
  }
  ir::Value* y = affine(ctx, operandAs(ctx, right, dtype), alpha, 0.0);
  if (a.has_value()) {
    switch (kind) {
    case ir::OpKind::Add: return addNumber(ctx, y, 1.0, *a);
    case ir::OpKind::Sub: return addNumber(ctx, y, -1.0, *a);
    case ir::OpKind::Mul: return affine(ctx, y, *a, 0.0);
    default: break; // a / y needs a reciprocal: use the tensor op
    }
  }
  return ctx.emit(kind, {operandAs(ctx, left, dtype), y});
}

double alphaArgument(const LoweringContext& ctx, size_t index) {
  return ctx.numInputs() > index ? ctx.toDouble(index) : 1.0;
}

void lowerAdd(LoweringContext& ctx) {
  ctx.setOutput(0, arithmetic(ctx, ir::OpKind::Add, 0, 1, alphaArgument(ctx, 2)));
}
void lowerSub(LoweringContext& ctx) {
  ctx.setOutput(0, arithmetic(ctx, ir::OpKind::Sub, 0, 1, alphaArgument(ctx, 2)));
}
// rsub(self, other, alpha) = other - alpha * self
void lowerReverseSub(LoweringContext& ctx) {
  ctx.setOutput(0, arithmetic(ctx, ir::OpKind::Sub, 1, 0, alphaArgument(ctx, 2)));
}
void lowerMul(LoweringContext& ctx) {
  ctx.setOutput(0, arithmetic(ctx, ir::OpKind::Mul, 0, 1, 1.0));
}

// div(self, other, rounding_mode=None|"trunc"|"floor"); div.out(self,
// other, out=) has no rounding mode (F.normalize(..., out=) divides so, as
// spectral_norm's power iteration calls it).
void lowerDiv(LoweringContext& ctx) {
  const std::optional<size_t> modeIndex = ctx.argumentIndex("rounding_mode");
  if (modeIndex.has_value() && !ctx.isNone(*modeIndex)) {
    const std::string mode = ctx.toString(*modeIndex);
    if (mode != "trunc" && mode != "floor") {
      ctx.unsupported("division with rounding_mode='" + mode +
                      "' (PyTorch takes None, 'trunc' or 'floor')");
    }
    ir::Value* quotient =
        emitBinaryFunction(ctx, mode == "floor" ? "div_floor" : "div_trunc", 0, 1);
    ctx.setOutput(0, inPlaceResult(ctx, quotient));
    return;
  }
  ctx.setOutput(0, arithmetic(ctx, ir::OpKind::Div, 0, 1, 1.0));
}

// addcmul(self, t1, t2, value) = self + value * t1 * t2 and addcdiv with
// t1 / t2, in PyTorch's order of operations. t1 and t2 are broadcast to the
// result first, so that their gradients are summed over the broadcast
// products as in PyTorch (which decides where inf and -inf meet as NaN).
template <ir::OpKind Kind> void lowerAddcOp(LoweringContext& ctx) {
  ir::Value* self = floatTensor(ctx, 0);
  ir::Value* t1 = floatTensor(ctx, 1);
  ir::Value* t2 = floatTensor(ctx, 2);
  std::optional<ir::Shape> shape = ir::broadcastShapes(self->type().shape, t1->type().shape);
  if (shape) shape = ir::broadcastShapes(*shape, t2->type().shape);
  if (!shape) {
    ctx.unsupported("operands " + self->type().str() + ", " + t1->type().str() + " and " +
                    t2->type().str() + " that do not broadcast together");
  }
  const auto broadcast = [&](ir::Value* x) {
    return x->type().shape == *shape ? x
                                     : ctx.emit(ir::OpKind::Broadcast, {x}, {{"shape", *shape}});
  };
  const double value = ctx.numInputs() > 3 ? ctx.toDouble(3) : 1.0;
  ir::Value* term = ctx.emit(Kind, {affine(ctx, broadcast(t1), value, 0.0), broadcast(t2)});
  ctx.setOutput(0, ctx.emit(ir::OpKind::Add, {self, term}));
}

// lerp(self, end, weight) as PyTorch's CPU kernel computes it: from self,
// self + w * (end - self) where w < 0.5, from end, end - (end - self) * (1 - w)
// elsewhere (so an infinite weight gives PyTorch's infinity, not NaN); the
// weight a number or a tensor (chosen element by element). (PyTorch fuses
// each product and sum into one rounding; popsim rounds twice.)
void lowerLerp(LoweringContext& ctx) {
  ir::Value* start = floatTensor(ctx, 0);
  ir::Value* end = floatTensor(ctx, 1);
  ir::Value* difference = ctx.emit(ir::OpKind::Sub, {end, start});
  if (const std::optional<double> w = ctx.staticScalar(2)) {
    ctx.setOutput(
        0, inPlaceResult(
               ctx, *w < 0.5 ? ctx.emit(ir::OpKind::Add, {start, affine(ctx, difference, *w, 0.0)})
                             : ctx.emit(ir::OpKind::Sub,
                                        {end, affine(ctx, difference, 1.0 - *w, 0.0)})));
    return;
  }
  // Each side sees the weight only where it is chosen (0 elsewhere), so that
  // the side not taken passes no NaN into the gradients (0 x inf).
  ir::Value* w = floatTensor(ctx, 2);
  ir::Value* zero = floatScalar(ctx, 0.0);
  ir::Value* nearStart = emitBinary(ctx, "lt", w, floatScalar(ctx, 0.5));
  ir::Value* startWeight = ctx.emit(ir::OpKind::Where, {nearStart, w, zero});
  ir::Value* endWeight = ctx.emit(ir::OpKind::Where, {nearStart, zero, affine(ctx, w, -1.0, 1.0)});
  ir::Value* fromStart =
      ctx.emit(ir::OpKind::Add, {start, ctx.emit(ir::OpKind::Mul, {startWeight, difference})});
  ir::Value* fromEnd =
      ctx.emit(ir::OpKind::Sub, {end, ctx.emit(ir::OpKind::Mul, {difference, endWeight})});
  ctx.setOutput(0, ctx.emit(ir::OpKind::Where, {nearStart, fromStart, fromEnd}));
}

void lowerNeg(LoweringContext& ctx) {
  const ir::DType dtype = ctx.tensor(0)->type().dtype;
  const bool integer = dtype == ir::DType::Int32 || dtype == ir::DType::Int64;
  ctx.setOutput(0, integer ? affine(ctx, ctx.tensor(0), -1.0, 0.0)
                           : emitPointwise(ctx, floatTensor(ctx, 0), "neg", {}));
}

// Ops that return their input unchanged in popsim's value semantics:
// contiguous (every tensor is contiguous), clone (aliasing.cpp keeps
// in-place writes to the copy and the original apart), positive, and
// resolve_conj / resolve_neg, which have nothing to resolve in real tensors
// (the schema says whether the result is a view of the input).
void lowerIdentity(LoweringContext& ctx) { ctx.setOutput(0, ctx.tensor(0)); }

// isreal(self): true everywhere, as popsim's tensors are real (complex
// dtypes are refused where they are made, complex_numbers.cpp).
void lowerIsReal(LoweringContext& ctx) {
  ctx.setOutput(0, constantFilled(ctx, {ir::DType::Bool, ctx.tensor(0)->type().shape}, 1.0));
}

// detach: the same values, through which no gradient flows.
void lowerDetach(LoweringContext& ctx) {
  ctx.setOutput(0, ctx.emit(ir::OpKind::StopGradient, {ctx.tensor(0)}, {}));
}

// aten::to(...) overloads and type_as: a cast when the dtype changes (device
// and memory-format arguments mean nothing on the simulated IPU).
void lowerTo(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::optional<ir::DType> target;
  if (const auto other = ctx.argumentIndex("other")) {
    target = ctx.tensor(*other)->type().dtype;
  } else {
    target = dtypeArgument(ctx);
  }
  if (target.has_value() && *target != x->type().dtype) {
    x = ctx.emit(ir::OpKind::Cast, {x}, {{"dtype", std::string(ir::dtypeName(*target))}});
  }
  ctx.setOutput(0, x);
}

} // namespace

void registerArithmetic(LoweringRegistry& registry) {
  registry.addWithInPlace("aten::add", lowerAdd);
  registry.addWithInPlace("aten::sub", lowerSub);
  registry.addWithInPlace("aten::mul", lowerMul);
  registry.addWithInPlace("aten::div", lowerDiv);
  registry.addWithInPlace("aten::neg", lowerNeg);
  registry.addWithInPlace("aten::addcmul", lowerAddcOp<ir::OpKind::Mul>);
  registry.addWithInPlace("aten::addcdiv", lowerAddcOp<ir::OpKind::Div>);
  registry.addWithInPlace("aten::lerp", lowerLerp);
  registry.add("aten::rsub", lowerReverseSub);
  registry.add("aten::contiguous", lowerIdentity);
  registry.add("aten::clone", lowerIdentity);
  // The conjugate of a real tensor is itself (conj_physical returns a new
  // tensor, conj_physical_ writes nothing new).
  for (const char* op : {"aten::positive", "aten::resolve_conj", "aten::resolve_neg",
                         "aten::conj_physical", "aten::conj_physical_"})
    registry.add(op, lowerIdentity);
  registry.add("aten::isreal", lowerIsReal);
  registry.add("aten::detach", lowerDetach);
  registry.add("aten::to", lowerTo);
  registry.add("aten::type_as", lowerTo);
}

} // namespace popsim::frontend::lowerings
