// Gradient rules: for each forward op, the ops computing the gradients of its
// inputs from the gradients of its outputs (PyTorch's derivative formulas).

#include "common/check.h"
#include "compiler/training/gradient_builder.h"
#include "ir/binary_functions.h"

#include <cmath>
#include <numeric>

namespace popsim::compiler {
namespace {

using ir::Attributes;
using ir::OpKind;
using ir::Value;
using Grads = std::vector<Value*>;
using Needed = std::vector<bool>;

const ir::Node& nodeOf(GradientBuilder& b) { return b.forward(); }

Value* in(GradientBuilder& b, size_t i) { return nodeOf(b).input(i); }
Value* out(GradientBuilder& b, size_t i = 0) { return nodeOf(b).output(i); }
Grads none(GradientBuilder& b) { return Grads(nodeOf(b).inputs().size(), nullptr); }

// `value` in `dtype` (a cast when it has another).
Value* asDType(GradientBuilder& b, Value* value, ir::DType dtype) {
  if (value->type().dtype == dtype) return value;
  return b.emit(OpKind::Cast, {value}, {{"dtype", std::string(ir::dtypeName(dtype))}});
}

Attributes copyAttrs(const Attributes& from, std::initializer_list<const char*> names) {
  Attributes attrs;
  for (const char* name : names) {
    attrs.set(name, *from.find(name));
  }
  return attrs;
}

std::vector<int64_t> allDimsExcept(int64_t rank, int64_t kept) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != kept) dims.push_back(d);
  }
  return dims;
}

Grads convolution(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const Attributes& attrs = nodeOf(b).attrs();
  if (needed[0]) {
    Attributes a = copyAttrs(attrs, {"stride", "padding", "dilation", "groups"});
    a.set("input_shape", in(b, 0)->type().shape);
    result[0] = b.emit(OpKind::ConvolutionGradInput, {g[0], in(b, 1)}, a);
  }
  if (needed[1]) {
    Attributes a = copyAttrs(attrs, {"stride", "padding", "dilation", "groups"});
    a.set("weight_shape", in(b, 1)->type().shape);
    result[1] = b.emit(OpKind::ConvolutionGradWeight, {in(b, 0), g[0]}, a);
  }
  if (result.size() == 3 && needed[2]) {
    result[2] = b.emit(OpKind::ReduceSum, {g[0]},
                       {{"dims", allDimsExcept(g[0]->type().rank(), 1)}, {"keepdim", false}});
  }
  return result;
}

// A transposed convolution is convolution_grad_input(x, w): its input's gradient
// is the forward convolution of the output's, its weight's the weight
// gradient of that convolution.
Grads convolutionGradInput(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const Attributes a = copyAttrs(nodeOf(b).attrs(), {"stride", "padding", "dilation", "groups"});
  if (needed[0]) {
    result[0] = b.emit(OpKind::Convolution, {g[0], in(b, 1)}, a);
  }
  if (needed[1]) {
    Attributes weight = a;
    weight.set("weight_shape", in(b, 1)->type().shape);
    result[1] = b.emit(OpKind::ConvolutionGradWeight, {g[0], in(b, 0)}, weight);
  }
  return result;
}

Grads linear(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* dy = g[0];
  const int64_t n = dy->type().shape.back();
  const int64_t rows = dy->type().numel() / n;
  if (needed[0]) {
    Value* dx = b.emit(OpKind::MatMul, {b.reshape(dy, {rows, n}), in(b, 1)});
    result[0] = b.reshape(dx, in(b, 0)->type().shape);
  }
  if (needed[1]) {
    result[1] = b.emit(OpKind::LinearGradWeight, {dy, in(b, 0)});
  }
  if (result.size() == 3 && needed[2]) {
    result[2] = dy->type().rank() == 1
                    ? dy
                    : b.emit(OpKind::ReduceSum, {dy},
                             {{"dims", allDimsExcept(dy->type().rank(), dy->type().rank() - 1)},
                              {"keepdim", false}});
  }
  return result;
}

// y = a @ b: da = dy @ b^T, db = a^T @ dy, each summed over broadcast batch dimensions.
Grads matmul(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (needed[0]) {
    Value* da = b.emit(OpKind::MatMul, {g[0], b.transposeLast(in(b, 1))});
    result[0] = b.sumToShape(da, in(b, 0)->type().shape);
  }
  if (needed[1]) {
    Value* db = b.emit(OpKind::MatMul, {b.transposeLast(in(b, 0)), g[0]});
    result[1] = b.sumToShape(db, in(b, 1)->type().shape);
  }
  return result;
}

// Activations whose derivative comes from the input (x) or the output (y).
template <bool FromOutput>
Grads activation(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (!needed[0]) return result;
  std::string name;
  switch (nodeOf(b).kind()) {
  case OpKind::Relu: name = "relu"; break;
  case OpKind::Sigmoid: name = "sigmoid"; break;
  case OpKind::Tanh: name = "tanh"; break;
  case OpKind::Abs: name = "abs"; break;
  default:
    name = nodeOf(b).attrs().getString("approximate") == "tanh" ? "gelu_tanh" : "gelu";
    break;
  }
  result[0] = b.emit(OpKind::ActivationGrad, {g[0], FromOutput ? out(b) : in(b, 0)},
                     {{"activation", name}});
  return result;
}

// The functions of ir/pointwise_functions.h: dx = dy * f'(x).
Grads pointwise(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (needed[0]) {
    result[0] = b.emit(OpKind::PointwiseGrad, {g[0], in(b, 0)},
                       copyAttrs(nodeOf(b).attrs(), {"function", "params"}));
  }
  return result;
}

Grads exp(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::Mul, {g[0], out(b)})};
}
Grads log(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::Div, {g[0], in(b, 0)})};
}
Grads sqrt(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::Div, {g[0], b.affine(out(b), 2.0, 0.0)})};
}
Grads affine(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.affine(g[0], nodeOf(b).attrs().getFloat("scale"), 0.0)};
}

Grads binary(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* dy = g[0];
  const ir::Shape& shapeA = in(b, 0)->type().shape;
  const ir::Shape& shapeB = in(b, 1)->type().shape;
  switch (nodeOf(b).kind()) {
  case OpKind::Add:
    if (needed[0]) result[0] = b.sumToShape(dy, shapeA);
    if (needed[1]) result[1] = b.sumToShape(dy, shapeB);
    break;
  case OpKind::Sub:
    if (needed[0]) result[0] = b.sumToShape(dy, shapeA);
    if (needed[1]) result[1] = b.sumToShape(b.affine(dy, -1.0, 0.0), shapeB);
    break;
  case OpKind::Mul:
    if (needed[0]) result[0] = b.sumToShape(b.emit(OpKind::Mul, {dy, in(b, 1)}), shapeA);
    if (needed[1]) result[1] = b.sumToShape(b.emit(OpKind::Mul, {dy, in(b, 0)}), shapeB);
    break;
  default: // Div: da = dy / b, db = -dy * a / b^2 = -(dy * y) / b
    if (needed[0]) result[0] = b.sumToShape(b.emit(OpKind::Div, {dy, in(b, 1)}), shapeA);
    if (needed[1]) {
      Value* dyy = b.emit(OpKind::Mul, {dy, out(b)});
      result[1] = b.sumToShape(b.affine(b.emit(OpKind::Div, {dyy, in(b, 1)}), -1.0, 0.0), shapeB);
    }
    break;
  }
  return result;
}

// The table's derivative of each operand, summed back over broadcasting;
// zeros where it has none (rounded divisions have a zero gradient).
Grads binaryPointwise(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const std::string& name = nodeOf(b).attrs().getString("function");
  const ir::BinaryFunction* function = ir::findBinaryFunction(name);
  POPSIM_ASSERT(function != nullptr, "no binary function ", name, ".");
  for (int64_t operand = 0; operand < 2; ++operand) {
    const auto k = static_cast<size_t>(operand);
    if (!needed[k]) continue;
    const ir::Shape& shape = in(b, k)->type().shape;
    if ((operand == 0 ? function->derivativeA : function->derivativeB) == nullptr) {
      result[k] = b.zeros(shape);
      continue;
    }
    Value* d = b.emit(OpKind::BinaryPointwiseGrad, {g[0], in(b, 0), in(b, 1)},
                      {{"function", name}, {"operand", operand}});
    result[k] = b.sumToShape(d, shape);
  }
  return result;
}

// max/min along a dimension: to the extremum (shared or the first, as the
// op's `ties` says).
Grads reduceExtremum(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::ReduceExtremumGrad, {g[0], in(b, 0), out(b)},
                 copyAttrs(nodeOf(b).attrs(), {"function", "dim", "ties"}))};
}

// cumsum: each input element reaches every later output, so its gradient is
// the running sum of the output gradient from the end (PyTorch's flip-cumsum-flip).
Grads cumulativeSum(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::CumulativeSum, {g[0]},
                 {{"dim", nodeOf(b).attrs().getInt("dim")},
                  {"reverse", !nodeOf(b).attrs().getBool("reverse")}})};
}

// prod / cumprod: PyTorch's formulas, from the input and the result
// (ir/ops/product.cpp).
Grads product(GradientBuilder& b, const Grads& g, const Needed&) {
  const OpKind gradient = nodeOf(b).kind() == OpKind::ReduceProduct ? OpKind::ReduceProductGrad
                                                                    : OpKind::CumulativeProductGrad;
  return {b.emit(gradient, {g[0], in(b, 0), out(b)}, copyAttrs(nodeOf(b).attrs(), {"dim"}))};
}

// index_select: each slice's gradient added back where it came from
// (repeated indices sum, as in PyTorch).
Grads indexSelect(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = b.emit(OpKind::IndexAdd, {b.zeros(in(b, 0)->type().shape), in(b, 1), g[0]},
                     {{"dim", nodeOf(b).attrs().getInt("dim")}, {"accumulate", true}});
  return result;
}

// index_add / index_copy: the input's gradient passes (but not into the
// overwritten slices of a copy); the source's is the slices it went to.
Grads indexAdd(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const int64_t dim = nodeOf(b).attrs().getInt("dim");
  const bool accumulate = nodeOf(b).attrs().getBool("accumulate");
  if (needed[0]) {
    result[0] = accumulate
                    ? g[0]
                    : b.emit(OpKind::IndexAdd, {g[0], in(b, 1), b.zeros(in(b, 2)->type().shape)},
                             {{"dim", dim}, {"accumulate", false}});
  }
  if (needed[2]) result[2] = b.emit(OpKind::IndexSelect, {g[0], in(b, 1)}, {{"dim", dim}});
  return result;
}

// gather: the gradient added back into the positions read (repeats sum).
Grads gather(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = b.emit(OpKind::Scatter, {b.zeros(in(b, 0)->type().shape), in(b, 1), g[0]},
                     {{"dim", nodeOf(b).attrs().getInt("dim")}, {"reduce", std::string("sum")}});
  return result;
}

// scatter: the input's gradient passes (not into overwritten positions when
// writing over); src's is read back from the positions it went to.
Grads scatter(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const int64_t dim = nodeOf(b).attrs().getInt("dim");
  const bool sum = nodeOf(b).attrs().getString("reduce") == "sum";
  if (needed[0]) {
    result[0] = sum ? g[0]
                    : b.emit(OpKind::Scatter, {g[0], in(b, 1), b.zeros(in(b, 2)->type().shape)},
                             {{"dim", dim}, {"reduce", std::string("none")}});
  }
  if (needed[2]) result[2] = b.emit(OpKind::Gather, {g[0], in(b, 1)}, {{"dim", dim}});
  return result;
}

// scatter_reduce: PyTorch's formulas for sum, mean (each value's share of
// its target's count), prod and amax/amin (split evenly between the values equal
// to the result, the input's counted even without include_self, as PyTorch
// counts them); without include_self the input gets none at reached targets.
Grads scatterReduce(GradientBuilder& b, const Grads& g, const Needed& needed) {
  const Attributes& attrs = nodeOf(b).attrs();
  const std::string& reduce = attrs.getString("reduce");
  const int64_t dim = attrs.getInt("dim");
  const bool includeSelf = attrs.getBool("include_self");
  Value* x = in(b, 0);
  Value* index = in(b, 1);
  Value* src = in(b, 2);
  const auto scatterSum = [&](Value* base, Value* values) {
    return b.emit(OpKind::ScatterReduce, {base, index, values},
                  {{"dim", dim}, {"reduce", std::string("sum")}, {"include_self", true}});
  };
  const auto gatherAt = [&](Value* v) {
    return b.emit(OpKind::Gather, {v, index}, {{"dim", dim}});
  };
  const auto ones = [&](const ir::Shape& shape) { return b.affine(b.zeros(shape), 1.0, 1.0); };
  Value* gradSelf = g[0];
  Value* gradSrc = nullptr;
  if (reduce == "sum") {
    gradSrc = gatherAt(g[0]);
  } else if (reduce == "mean") {
    Value* counts = scatterSum(includeSelf ? ones(x->type().shape) : b.zeros(x->type().shape),
                               ones(src->type().shape));
    Value* shares =
        b.emit(OpKind::Div, {g[0], b.emit(OpKind::Pointwise, {counts},
                                          {{"function", std::string("clamp")},
                                           {"params", std::vector<double>{1.0, INFINITY}}})});
    gradSelf = shares;
    gradSrc = gatherAt(shares);
  } else if (reduce == "prod") {
    // PyTorch's formulas, exact where values are zero: the gradient of a
    // zero factor is the product of the others, taken with it set to one.
    Value* zero = b.zeros({});
    Value* one = b.affine(zero, 1.0, 1.0);
    const auto isZero = [&](Value* v) {
      return b.emit(OpKind::BinaryPointwise, {v, zero}, {{"function", std::string("eq")}});
    };
    const auto oneWhere = [&](Value* mask, Value* v) {
      return b.emit(OpKind::Where, {mask, one, v});
    };
    const auto product = [&](Value* base, Value* values) {
      return b.emit(OpKind::ScatterReduce, {base, index, values},
                    {{"dim", dim}, {"reduce", std::string("prod")}, {"include_self", includeSelf}});
    };
    Value* maskedSelf = oneWhere(isZero(x), x);
    gradSelf =
        b.emit(OpKind::Div, {b.emit(OpKind::Mul, {g[0], product(maskedSelf, src)}), maskedSelf});
    Value* srcZero = isZero(src);
    Value* zerosAtTarget = gatherAt(scatterSum(
        b.zeros(x->type().shape),
        b.emit(OpKind::Cast, {srcZero}, {{"dtype", std::string(ir::dtypeName(x->type().dtype))}})));
    Value* singleZero = b.emit(OpKind::BinaryPointwise,
                               {srcZero, b.emit(OpKind::BinaryPointwise, {zerosAtTarget, one},
                                                {{"function", std::string("eq")}})},
                               {{"function", std::string("logical_and")}});
    Value* othersProduct =
        gatherAt(b.emit(OpKind::Mul, {g[0], product(x, oneWhere(singleZero, src))}));
    Value* quotient = b.emit(
        OpKind::Div, {gatherAt(b.emit(OpKind::Mul, {g[0], out(b)})), oneWhere(srcZero, src)});
    gradSrc = b.emit(OpKind::Where, {singleZero, othersProduct, quotient});
  } else { // amax, amin
    Value* result = out(b);
    const auto equal = [&](Value* a, Value* c) {
      return b.emit(OpKind::Cast,
                    {b.emit(OpKind::BinaryPointwise, {a, c}, {{"function", std::string("eq")}})},
                    {{"dtype", std::string(ir::dtypeName(x->type().dtype))}});
    };
    Value* selfIsResult = equal(x, result);
    Value* srcIsResult = equal(src, gatherAt(result));
    Value* shares = b.emit(OpKind::Div, {g[0], scatterSum(selfIsResult, srcIsResult)});
    gradSelf = b.emit(OpKind::Mul, {selfIsResult, shares});
    gradSrc = b.emit(OpKind::Mul, {srcIsResult, gatherAt(shares)});
  }
  if (!includeSelf && needed[0]) {
    gradSelf = b.emit(OpKind::Scatter, {gradSelf, index, b.zeros(src->type().shape)},
                      {{"dim", dim}, {"reduce", std::string("none")}});
  }
  Grads result = none(b);
  if (needed[0]) result[0] = gradSelf;
  if (needed[2]) result[2] = gradSrc;
  return result;
}

// sort: each value's gradient goes back to where the value came from.
Grads sortValues(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "sort indices reach the loss.");
  return {b.emit(OpKind::Scatter, {b.zeros(in(b, 0)->type().shape), out(b, 1), g[0]},
                 {{"dim", nodeOf(b).attrs().getInt("dim")}, {"reduce", std::string("sum")}})};
}

// Random draws: PyTorch gives bernoulli's probabilities a zero gradient.
Grads noGradient(GradientBuilder& b, const Grads&, const Needed&) { return none(b); }

// no_derivative: training through what it marks is an error, as PyTorch's
// backward raises there.
Grads noDerivative(GradientBuilder& b, const Grads&, const Needed&) {
  const ir::Node& node = nodeOf(b);
  throwError(ErrorKind::Unsupported,
             strCat("Unsupported op in the backward pass: ", node.attrs().getString("what"),
                    node.location().known() ? " at " + node.location().str() : std::string(),
                    " has no derivative (PyTorch's backward raises here too) and lies between the "
                    "trained weights and the loss. ",
                    node.attrs().getString("hint")));
}

// check_range and recomputation_checkpoint pass their input through, and so
// the gradient.
Grads passThrough(GradientBuilder&, const Grads& g, const Needed&) { return {g[0]}; }

// print_tensor: the gradient passes through, printed as "<title>_gradient"
// when print_gradient is set (as PopTorch's ipu_print_tensor does).
Grads printTensor(GradientBuilder& b, const Grads& g, const Needed&) {
  const Attributes& attrs = nodeOf(b).attrs();
  if (!attrs.getBool("print_gradient")) return {g[0]};
  Attributes printed = attrs;
  printed.set("title", attrs.getString("title") + "_gradient");
  printed.set("print_gradient", false);
  return {b.emit(OpKind::PrintTensor, {g[0]}, printed)};
}

// ctc_loss: PyTorch's gradient into the log-probabilities only.
Grads ctcLoss(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = b.emit(OpKind::CtcLossGrad, {g[0], in(b, 0), in(b, 1), in(b, 2), in(b, 3), out(b)},
                     copyAttrs(nodeOf(b).attrs(), {"blank", "zero_infinity"}));
  return result;
}

// where(c, a, b): the gradient goes to the operand each element came from.
Grads where(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* zero = b.zeros({});
  if (needed[1]) {
    result[1] = b.sumToShape(b.emit(OpKind::Where, {in(b, 0), g[0], zero}), in(b, 1)->type().shape);
  }
  if (needed[2]) {
    result[2] = b.sumToShape(b.emit(OpKind::Where, {in(b, 0), zero, g[0]}), in(b, 2)->type().shape);
  }
  return result;
}

Grads softmax(GradientBuilder& b, const Grads& g, const Needed&) {
  const OpKind kind =
      nodeOf(b).kind() == OpKind::Softmax ? OpKind::SoftmaxGrad : OpKind::LogSoftmaxGrad;
  return {b.emit(kind, {g[0], out(b)}, copyAttrs(nodeOf(b).attrs(), {"dim"}))};
}

// max_pool2d_train and adaptive_max_pool2d: dY added at the recorded maxima.
Grads maxPool(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "max pooling indices reach the loss.");
  return {
      b.emit(OpKind::MaxPool2dGrad, {g[0], out(b, 1)}, {{"input_shape", in(b, 0)->type().shape}})};
}

Grads avgPool(GradientBuilder& b, const Grads& g, const Needed&) {
  Attributes a = copyAttrs(nodeOf(b).attrs(), {"kernel", "stride", "padding", "ceil_mode",
                                               "count_include_pad", "divisor_override"});
  a.set("input_shape", in(b, 0)->type().shape);
  return {b.emit(OpKind::AvgPool2dGrad, {g[0]}, a)};
}

Grads adaptiveAvgPool(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::AdaptiveAvgPool2dGrad, {g[0]}, {{"input_shape", in(b, 0)->type().shape}})};
}

// Inference batch norm (running statistics) in a training graph, e.g. frozen
// batch norm: y = (x - mean) * w / sqrt(var + eps) + b per channel.
Grads batchNormEval(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* dy = g[0];
  const ir::Shape& shape = in(b, 0)->type().shape;
  ir::Shape channelShape(shape.size(), 1);
  channelShape[1] = shape[1];
  const double eps = nodeOf(b).attrs().getFloat("eps");
  // float32 running statistics of a float16 layer (runningStatisticsAlwaysFloat)
  // enter its gradient in the layer's dtype.
  const ir::DType dtype = in(b, 0)->type().dtype;
  Value* mean = asDType(b, in(b, 1), dtype);
  Value* stdev = b.emit(OpKind::Sqrt, {b.affine(asDType(b, in(b, 2), dtype), 1.0, eps)});
  const std::vector<int64_t> reduce = allDimsExcept(dy->type().rank(), 1);
  if (needed[0]) {
    Value* scale =
        b.reshape(b.emit(OpKind::Div, {asDType(b, in(b, 3), dtype), stdev}), channelShape);
    result[0] = b.emit(OpKind::Mul, {dy, scale});
  }
  if (needed[3]) {
    Value* centered = b.emit(OpKind::Sub, {in(b, 0), b.reshape(mean, channelShape)});
    Value* xhat = b.emit(OpKind::Div, {centered, b.reshape(stdev, channelShape)});
    result[3] = b.emit(OpKind::ReduceSum, {b.emit(OpKind::Mul, {dy, xhat})},
                       {{"dims", reduce}, {"keepdim", false}});
  }
  if (needed[4]) {
    result[4] = b.emit(OpKind::ReduceSum, {dy}, {{"dims", reduce}, {"keepdim", false}});
  }
  return result;
}

// batch_norm_train / layer_norm_train -> one fused gradient op for (dx, dw, db).
Grads normalizationTrain(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr && g[2] == nullptr, "normalisation statistics reach the loss.");
  const bool batch = nodeOf(b).kind() == OpKind::BatchNormTrain;
  const std::vector<Value*> grads =
      b.emitMulti(batch ? OpKind::BatchNormGrad : OpKind::LayerNormGrad,
                  {g[0], in(b, 0), in(b, 1), out(b, 1), out(b, 2)},
                  batch ? copyAttrs(nodeOf(b).attrs(), {"eps"})
                        : copyAttrs(nodeOf(b).attrs(), {"normalized_ndim", "eps"}));
  return {grads[0], grads[1], grads[2]};
}

// A cast between float types passes the gradient back in its input's dtype
// (so a float16 input's gradient is rounded to float16); from integers and
// bools no gradient flows.
Grads cast(GradientBuilder& b, const Grads& g, const Needed&) {
  const ir::DType from = in(b, 0)->type().dtype;
  if (!ir::isFloat(from)) return none(b);
  return {b.emit(OpKind::Cast, {g[0]}, {{"dtype", std::string(ir::dtypeName(from))}})};
}

Grads reshape(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.reshape(g[0], in(b, 0)->type().shape)};
}

Grads permute(GradientBuilder& b, const Grads& g, const Needed&) {
  const auto& perm = nodeOf(b).attrs().getInts("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {b.emit(OpKind::Permute, {g[0]}, {{"perm", inverse}})};
}

Grads slice(GradientBuilder& b, const Grads& g, const Needed&) {
  Attributes a = copyAttrs(nodeOf(b).attrs(), {"dim", "start", "end", "step"});
  a.set("input_shape", in(b, 0)->type().shape);
  return {b.emit(OpKind::SliceGrad, {g[0]}, a)};
}

// The input's gradient is the output's with the overwritten slice zeroed;
// the update's is that slice of the output's.
Grads sliceUpdate(GradientBuilder& b, const Grads& g, const Needed& needed) {
  const Attributes a = copyAttrs(nodeOf(b).attrs(), {"dim", "start", "end", "step"});
  Grads result = none(b);
  if (needed[0]) {
    result[0] = b.emit(OpKind::SliceUpdate, {g[0], b.zeros(in(b, 1)->type().shape)}, a);
  }
  if (needed[1]) {
    result[1] = b.emit(OpKind::Slice, {g[0]}, a);
  }
  return result;
}

// overwrite(x, v): the gradient goes to x only, as if the write had not happened.
Grads overwrite(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = g[0];
  return result;
}

Grads concat(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const int64_t dim = nodeOf(b).attrs().getInt("dim");
  int64_t start = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    const int64_t size = in(b, i)->type().shape[static_cast<size_t>(dim)];
    if (needed[i]) {
      result[i] =
          b.emit(OpKind::Slice, {g[0]},
                 {{"dim", dim}, {"start", start}, {"end", start + size}, {"step", int64_t{1}}});
    }
    start += size;
  }
  return result;
}

// The gradient of a reduction is spread back over the reduced dimensions.
Grads reduce(GradientBuilder& b, const Grads& g, const Needed&) {
  const ir::Shape& shape = in(b, 0)->type().shape;
  ir::Shape kept = shape;
  int64_t count = 1;
  for (int64_t dim : nodeOf(b).attrs().getInts("dims")) {
    kept[static_cast<size_t>(dim)] = 1;
    count *= shape[static_cast<size_t>(dim)];
  }
  Value* spread = b.emit(OpKind::Broadcast, {b.reshape(g[0], kept)}, {{"shape", shape}});
  if (nodeOf(b).kind() == OpKind::ReduceMean) {
    spread = b.affine(spread, 1.0 / static_cast<double>(count), 0.0);
  }
  return {spread};
}

Grads broadcast(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.sumToShape(g[0], in(b, 0)->type().shape)};
}

Grads embedding(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (needed[0]) {
    result[0] = b.emit(OpKind::EmbeddingGrad, {g[0], in(b, 1)},
                       {{"num_embeddings", in(b, 0)->type().shape[0]},
                        {"padding_idx", nodeOf(b).attrs().getInt("padding_idx")}});
  }
  return result;
}

Grads dropout(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "a dropout mask reaches the loss.");
  return {b.emit(OpKind::Mul, {g[0], out(b, 1)}), nullptr};
}

Grads nllLoss(GradientBuilder& b, const Grads& g, const Needed&) {
  Attributes a = copyAttrs(nodeOf(b).attrs(), {"reduction", "ignore_index"});
  a.set("num_classes", in(b, 0)->type().shape[1]);
  std::vector<Value*> inputs = {g[0], in(b, 1)};
  if (nodeOf(b).inputs().size() == 3) inputs.push_back(in(b, 2)); // class weights
  Grads result = none(b);
  result[0] = b.emit(OpKind::NllLossGrad, inputs, a);
  return result; // (PyTorch has no gradient for the targets nor the class weights)
}

} // namespace

GradientRule findGradientRule(ir::OpKind kind) {
  switch (kind) {
  case OpKind::Convolution: return convolution;
  case OpKind::Linear: return linear;
  case OpKind::MatMul: return matmul;
  case OpKind::Relu:
  case OpKind::Sigmoid:
  case OpKind::Tanh: return activation<true>;
  case OpKind::Gelu:
  case OpKind::Abs: return activation<false>;
  case OpKind::Exp: return exp;
  case OpKind::Pointwise: return pointwise;
  case OpKind::BinaryPointwise: return binaryPointwise;
  case OpKind::Where: return where;
  case OpKind::ReduceExtremum: return reduceExtremum;
  case OpKind::CumulativeSum: return cumulativeSum;
  case OpKind::ReduceProduct:
  case OpKind::CumulativeProduct: return product;
  case OpKind::Log: return log;
  case OpKind::Sqrt: return sqrt;
  case OpKind::Affine: return affine;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div: return binary;
  case OpKind::Softmax:
  case OpKind::LogSoftmax: return softmax;
  case OpKind::MaxPool2dTrain:
  case OpKind::AdaptiveMaxPool2d: return maxPool;
  case OpKind::AvgPool2d: return avgPool;
  case OpKind::AdaptiveAvgPool2d: return adaptiveAvgPool;
  case OpKind::BatchNorm: return batchNormEval;
  case OpKind::BatchNormTrain:
  case OpKind::LayerNormTrain: return normalizationTrain;
  case OpKind::ConvolutionGradInput: return convolutionGradInput;
  case OpKind::Cast: return cast;
  case OpKind::Reshape: return reshape;
  case OpKind::Permute: return permute;
  case OpKind::Slice: return slice;
  case OpKind::SliceUpdate: return sliceUpdate;
  case OpKind::Overwrite: return overwrite;
  case OpKind::Concat: return concat;
  case OpKind::ReduceSum:
  case OpKind::ReduceMean: return reduce;
  case OpKind::Broadcast: return broadcast;
  case OpKind::Embedding: return embedding;
  case OpKind::Dropout: return dropout;
  case OpKind::NllLoss: return nllLoss;
  case OpKind::CtcLoss: return ctcLoss;
  case OpKind::CheckRange:
  case OpKind::RecomputationCheckpoint: return passThrough;
  case OpKind::PrintTensor: return printTensor;
  case OpKind::NoDerivative: return noDerivative;
  case OpKind::IndexSelect: return indexSelect;
  case OpKind::IndexAdd: return indexAdd;
  case OpKind::Gather: return gather;
  case OpKind::Scatter: return scatter;
  case OpKind::ScatterReduce: return scatterReduce;
  case OpKind::Sort: return sortValues;
  case OpKind::RandomDraw:
  case OpKind::RandomBernoulli: return noGradient;
  default: return nullptr; // LayerNorm and MaxPool2d become their training forms first
  }
}

} // namespace popsim::compiler
