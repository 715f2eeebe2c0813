#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// relu, sigmoid, tanh, exp, log, sqrt and abs: integer and bool tensors
// converted to float32 as PyTorch converts them, except for relu and abs,
// which PyTorch computes exactly in the integer dtype.
template <ir::OpKind Kind> void lowerUnary(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::DType dtype = x->type().dtype;
  const bool integer = dtype == ir::DType::Int32 || dtype == ir::DType::Int64;
  if (integer && Kind == ir::OpKind::Relu) {
    ctx.setOutput(0, emitBinary(ctx, "clamp_min", x, constantFilled(ctx, {dtype, {}}, 0.0)));
    return;
  }
  if (integer && Kind == ir::OpKind::Abs) {
    ctx.setOutput(0, emitBinary(ctx, "maximum", x, affine(ctx, x, -1.0, 0.0)));
    return;
  }
  ctx.setOutput(0, ctx.emit(Kind, {floatOperand(ctx, 0)}));
}

// aten::gelu(input, approximate="none")
void lowerGelu(LoweringContext& ctx) {
  const std::string approximate = ctx.numInputs() > 1 ? ctx.toString(1) : "none";
  ctx.setOutput(0,
                ctx.emit(ir::OpKind::Gelu, {floatTensor(ctx, 0)}, {{"approximate", approximate}}));
}

// aten::softmax / log_softmax(input, dim, dtype=None)
template <ir::OpKind Kind> void lowerSoftmax(LoweringContext& ctx) {
  ir::Value* x = floatOperand(ctx, 0);
  if (ctx.numInputs() > 2 && !ctx.isNone(2)) {
    // dtype=: the input converted first, as in PyTorch.
    const ir::DType asked = ctx.toDType(2);
    if (!ir::isFloat(asked)) ctx.unsupported("softmax with a dtype other than float16 or float32");
    x = castTo(ctx, x, asked);
  } else if (!ir::isFloat(ctx.tensor(0)->type().dtype)) {
    floatTensor(ctx, 0); // softmax of integers, which PyTorch refuses too
  }
  const bool scalar = x->type().rank() == 0;
  if (scalar) x = reshape(ctx, x, {1});
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  ir::Value* y = ctx.emit(Kind, {x}, {{"dim", dim}});
  ctx.setOutput(0, scalar ? reshape(ctx, y, {}) : y);
}

// aten::dropout(input, p, train) and its variants: the identity in eval mode;
// in train mode (in a training model, or in an inference model whose dropout
// is in train mode, as eager PyTorch and PopTorch run it), a mask drawn from
// the dropout counter, per element or (feature dropout) per channel; alpha
// dropout, which rescales otherwise, is not supported.
void lowerDropout(LoweringContext& ctx) {
  const double p = ctx.toDouble(1);
  if (!ctx.toBool(2) || p == 0.0) {
    ctx.setOutput(0, ctx.tensor(0));
    return;
  }
  const bool feature = ctx.opName().rfind("aten::feature_dropout", 0) == 0;
  if (!feature && ctx.opName() != "aten::dropout" && ctx.opName() != "aten::dropout_") {
    ctx.unsupported(ctx.opName() + " in train mode (nn.Dropout and nn.Dropout1d/2d/3d are "
                                   "supported, not alpha dropout)");
  }
  const auto drop = [&](ir::Value* x) {
    return ctx.emitMulti(
        ir::OpKind::Dropout, {x, ctx.randomCounter()},
        {{"p", p}, {"seed", ctx.randomSeed()}, {"stream", ctx.nextRandomStream()}})[0];
  };
  ir::Value* x = floatTensor(ctx, 0);
  if (!feature) {
    ctx.setOutput(0, drop(x));
    return;
  }
  // nn.Dropout1d/2d/3d: one draw per (sample, channel), as PyTorch's feature
  // noise of shape [N, C, 1, ...], scaled as dropout scales, times x.
  const ir::Shape& shape = x->type().shape;
  if (shape.size() < 2) ctx.unsupported("feature dropout of a tensor with fewer than 2 dimensions");
  ir::Shape noise(shape.size(), 1);
  noise[0] = shape[0];
  noise[1] = shape[1];
  ir::Value* mask = drop(constantFilled(ctx, {x->type().dtype, noise}, 1.0));
  ctx.setOutput(0, ctx.emit(ir::OpKind::Mul, {x, broadcastTo(ctx, mask, shape)}));
}

// aten::glu(input, dim=-1): the first half along dim times the sigmoid of
// the second.
void lowerGlu(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const int64_t dim = normalizedDim(ctx, ctx.numInputs() > 1 ? ctx.toInt(1) : -1, rank);
  const int64_t size = rank > 0 ? x->type().shape[static_cast<size_t>(dim)] : 0;
  if (rank == 0 || size % 2 != 0) {
    ctx.unsupported("glu over a dimension of odd size " + std::to_string(size) +
                    " (PyTorch requires it to be even)");
  }
  const auto half = [&](int64_t start) {
    return ctx.emit(
        ir::OpKind::Slice, {x},
        {{"dim", dim}, {"start", start}, {"end", start + size / 2}, {"step", int64_t{1}}});
  };
  ctx.setOutput(
      0, ctx.emit(ir::OpKind::Mul, {half(0), ctx.emit(ir::OpKind::Sigmoid, {half(size / 2)})}));
}

// aten::rrelu(input, lower, upper, training, generator): in evaluation, a
// leaky relu with the mean slope; in training, each negative element's slope
// drawn uniformly from [lower, upper] (popsim's draws, not PyTorch's), the
// gradient through the same slopes, as PyTorch computes it.
void lowerRrelu(LoweringContext& ctx) {
  const bool training = ctx.numInputs() > 3 && ctx.toBool(3);
  const double lower = ctx.numInputs() > 1 ? ctx.toDouble(1) : 1.0 / 8.0;
  const double upper = ctx.numInputs() > 2 ? ctx.toDouble(2) : 1.0 / 3.0;
  ir::Value* x = floatTensor(ctx, 0);
  if (!training) {
    ctx.setOutput(0, emitPointwise(ctx, x, "leaky_relu", {(lower + upper) / 2.0}));
    return;
  }
  const ir::DType dtype = x->type().dtype;
  ir::Value* slopes = castTo(ctx, uniformDraw(ctx, lower, upper, x->type().shape), dtype);
  ir::Value* kept = emitBinary(ctx, "ge", x, constantFilled(ctx, {dtype, {}}, 0.0));
  ir::Value* slope =
      ctx.emit(ir::OpKind::Where, {kept, constantFilled(ctx, {dtype, {}}, 1.0), slopes});
  ctx.setOutput(0, ctx.emit(ir::OpKind::Mul, {x, slope}));
}

} // namespace

void registerActivations(LoweringRegistry& registry) {
  registry.add("aten::glu", lowerGlu);
  registry.add("aten::rrelu", lowerRrelu);
  registry.add("aten::rrelu_", lowerRrelu);
  registry.addWithInPlace("aten::relu", lowerUnary<ir::OpKind::Relu>);
  registry.addWithInPlace("aten::sigmoid", lowerUnary<ir::OpKind::Sigmoid>);
  registry.addWithInPlace("aten::tanh", lowerUnary<ir::OpKind::Tanh>);
  registry.addWithInPlace("aten::exp", lowerUnary<ir::OpKind::Exp>);
  registry.addWithInPlace("aten::log", lowerUnary<ir::OpKind::Log>);
  registry.addWithInPlace("aten::sqrt", lowerUnary<ir::OpKind::Sqrt>);
  registry.addWithInPlace("aten::abs", lowerUnary<ir::OpKind::Abs>);
  registry.addWithInPlace("aten::dropout", lowerDropout);
  registry.addWithInPlace("aten::feature_dropout", lowerDropout);
  registry.addWithInPlace("aten::alpha_dropout", lowerDropout);
  registry.addWithInPlace("aten::feature_alpha_dropout", lowerDropout);
  registry.add("aten::gelu", lowerGelu);
  registry.add("aten::softmax", lowerSoftmax<ir::OpKind::Softmax>);
  registry.add("aten::log_softmax", lowerSoftmax<ir::OpKind::LogSoftmax>);
}

} // namespace popsim::frontend::lowerings
