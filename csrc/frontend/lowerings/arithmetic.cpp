#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <optional>

namespace popsim::frontend::lowerings {
namespace {

// a op b where at most one side is a compile-time number: a number becomes an
// affine op (x * 2, x + 1, x / 8 ...); two tensors become a broadcasting op.
// `alpha` scales b, as in torch.add(a, b, alpha=...).
// Integer tensors (counters such as num_batches_tracked) take whole-number
// scalars: x + 1, x - 2, x * 3.
std::optional<ir::Value*> integerArithmetic(LoweringContext& ctx, ir::OpKind kind, size_t left,
                                            size_t right, double alpha) {
  if (!ctx.isTensor(left)) return std::nullopt;
  ir::Value* x = ctx.tensor(left);
  const std::optional<double> b = ctx.staticScalar(right);
  if (x->type().dtype == ir::DType::Float32 || !b.has_value() || *b != static_cast<int64_t>(*b)) {
    return std::nullopt;
  }
  switch (kind) {
  case ir::OpKind::Add: return affine(ctx, x, 1.0, alpha * *b);
  case ir::OpKind::Sub: return affine(ctx, x, 1.0, -alpha * *b);
  case ir::OpKind::Mul: return affine(ctx, x, *b, 0.0);
  default: return std::nullopt;
  }
}

ir::Value* arithmetic(LoweringContext& ctx, ir::OpKind kind, size_t left, size_t right,
                      double alpha) {
  if (const auto integer = integerArithmetic(ctx, kind, left, right, alpha)) {
    return *integer;
  }
  const std::optional<double> a = ctx.staticScalar(left);
  const std::optional<double> b = ctx.staticScalar(right);
  if (b.has_value()) {
    ir::Value* x = floatTensor(ctx, left);
    switch (kind) {
    case ir::OpKind::Add: return affine(ctx, x, 1.0, alpha * *b);
    case ir::OpKind::Sub: return affine(ctx, x, 1.0, -alpha * *b);
    case ir::OpKind::Mul: return affine(ctx, x, *b, 0.0);
    default: return affine(ctx, x, 1.0 / *b, 0.0);
    }
  }
  ir::Value* y = affine(ctx, floatTensor(ctx, right), alpha, 0.0);
  if (a.has_value()) {
    switch (kind) {
    case ir::OpKind::Add: return affine(ctx, y, 1.0, *a);
    case ir::OpKind::Sub: return affine(ctx, y, -1.0, *a);
    case ir::OpKind::Mul: return affine(ctx, y, *a, 0.0);
    default: break; // a / y needs a reciprocal: use the tensor op
    }
  }
  return ctx.emit(kind, {floatTensor(ctx, left), y});
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

// div(self, other, rounding_mode=None): true division only.
void lowerDiv(LoweringContext& ctx) {
  if (ctx.numInputs() > 2 && !ctx.isNone(2)) {
    ctx.unsupported("division with rounding_mode='" + ctx.toString(2) + "' on runtime tensors");
  }
  ctx.setOutput(0, arithmetic(ctx, ir::OpKind::Div, 0, 1, 1.0));
}

void lowerNeg(LoweringContext& ctx) {
  ctx.setOutput(0, affine(ctx, floatTensor(ctx, 0), -1.0, 0.0));
}

// Ops that return their input unchanged in popsim's value semantics:
// contiguous (every tensor is contiguous) and clone (aliasing.cpp keeps
// in-place writes to the copy and the original apart).
void lowerIdentity(LoweringContext& ctx) { ctx.setOutput(0, ctx.tensor(0)); }

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
  } else if (const auto dtype = ctx.argumentIndex("dtype"); dtype && !ctx.isNone(*dtype)) {
    target = ctx.toDType(*dtype);
    if (!target.has_value()) {
      ctx.unsupported("conversion to a dtype popsim does not compute with; it computes with "
                      "float32, int32, int64 and bool tensors (convert to one of them)");
    }
  }
  if (target.has_value() && *target != x->type().dtype) {
    x = ctx.emit(ir::OpKind::Cast, {x}, {{"dtype", std::string(ir::dtypeName(*target))}});
  }
  ctx.setOutput(0, x);
}

} // namespace

void registerArithmetic(LoweringRegistry& registry) {
  for (const char* suffix : {"", "_"}) {
    const std::string s(suffix);
    registry.add("aten::add" + s, lowerAdd);
    registry.add("aten::sub" + s, lowerSub);
    registry.add("aten::mul" + s, lowerMul);
    registry.add("aten::div" + s, lowerDiv);
    registry.add("aten::neg" + s, lowerNeg);
  }
  registry.add("aten::rsub", lowerReverseSub);
  registry.add("aten::contiguous", lowerIdentity);
  registry.add("aten::clone", lowerIdentity);
  registry.add("aten::detach", lowerDetach);
  registry.add("aten::to", lowerTo);
  registry.add("aten::type_as", lowerTo);
}

} // namespace popsim::frontend::lowerings
