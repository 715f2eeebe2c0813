#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"
#include "ir/vector_arithmetic.h"

namespace popsim::ir::ops {
namespace {

std::vector<TensorType> inferUnary(const std::vector<TensorType>& inputs, const Attributes&) {
  requireFloat(inputs[0], "input 0 (input)");
  return {inputs[0]};
}

// affine on float tensors, or with whole numbers on integer tensors (counters).
std::vector<TensorType> inferAffine(const std::vector<TensorType>& inputs,
                                    const Attributes& attrs) {
  const DType dtype = inputs[0].dtype;
  if (dtype == DType::Int64 || dtype == DType::Int32) {
    const double scale = attrs.getFloat("scale");
    const double shift = attrs.getFloat("shift");
    POPSIM_CHECK(scale == static_cast<double>(static_cast<int64_t>(scale)) &&
                     shift == static_cast<double>(static_cast<int64_t>(shift)),
                 ErrorKind::Compilation, "affine on ", inputs[0].str(),
                 " needs whole-number scale and shift, got ", scale, " and ", shift, ".");
    return {inputs[0]};
  }
  return inferUnary(inputs, attrs);
}

std::vector<TensorType> inferGelu(const std::vector<TensorType>& inputs, const Attributes& attrs) {
  const std::string& approximate = attrs.getString("approximate");
  POPSIM_CHECK(approximate == "none" || approximate == "tanh", ErrorKind::Compilation,
               "approximate must be \"none\" or \"tanh\", got \"", approximate, "\".");
  return inferUnary(inputs, attrs);
}

// add/sub/mul/div of two float tensors with NumPy broadcasting.
std::vector<TensorType> inferBinary(const std::vector<TensorType>& inputs, const Attributes&) {
  requireFloat(inputs[0], "input 0 (a)");
  requireDType(inputs[1], inputs[0].dtype, "input 1 (b)");
  auto shape = broadcastShapes(inputs[0].shape, inputs[1].shape);
  POPSIM_CHECK(shape.has_value(), ErrorKind::Compilation, "shapes ", inputs[0].str(), " and ",
               inputs[1].str(), " do not broadcast.");
  return {{inputs[0].dtype, *shape}};
}

// activation_grad(dY, ref): ref is the forward input (relu, gelu, abs) or
// output (sigmoid, tanh), as the activation attribute says.
std::vector<TensorType> inferActivationGrad(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  requireFloats(inputs);
  const std::string& activation = attrs.getString("activation");
  POPSIM_CHECK(activation == "relu" || activation == "gelu" || activation == "gelu_tanh" ||
                   activation == "sigmoid" || activation == "tanh" || activation == "abs",
               ErrorKind::Compilation, "unknown activation \"", activation, "\".");
  requireShape(inputs[1], inputs[0].shape, "input 1 (reference)");
  return {inputs[0]};
}

// Activations whose derivative comes from the input (x) or the output (y).
template <bool FromOutput>
Grads activationGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
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

// One vertex: the activation's derivative times the incoming gradient.
OpWork activationGradWork(const Node& node) {
  return work::elementwiseFunction(
      node, activationGradientArithmetic(node.attrs().getString("activation")));
}

Grads expGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::Mul, {g[0], out(b)})};
}

Grads logGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::Div, {g[0], in(b, 0)})};
}

Grads sqrtGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::Div, {g[0], b.affine(out(b), 2.0, 0.0)})};
}

Grads affineGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.affine(g[0], nodeOf(b).attrs().getFloat("scale"), 0.0)};
}

Grads binaryGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
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

} // namespace

void registerElementwiseOps(OpRegistry& registry) {
  for (OpKind kind : {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh, OpKind::Exp, OpKind::Log,
                      OpKind::Sqrt, OpKind::Abs}) {
    registry.add(kind, 1, 1, {"input"}, {}, inferUnary);
  }
  registry.add(OpKind::Gelu, 1, 1, {"input"}, {{"approximate", AttrType::String}}, inferGelu);
  // affine(x) = scale * x + shift: what scalar arithmetic (x * 2, x + 1, x / 8) lowers to.
  // A zero shift is none, so a product keeps the sign of a zero as PyTorch's does
  // (-2 * 0.0 is -0.0; adding 0.0 would make it 0.0, as x + 0.0 does: an add op).
  registry.add(OpKind::Affine, 1, 1, {"input"},
               {{"scale", AttrType::Float}, {"shift", AttrType::Float}}, inferAffine);
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    registry.add(kind, 2, 2, {"a", "b"}, {}, inferBinary);
  }
  registry.add(OpKind::ActivationGrad, 2, 2, {"grad_output", "reference"},
               {{"activation", AttrType::String}}, inferActivationGrad);
  for (OpKind kind : {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh}) {
    registry.setGradient(kind, activationGradient<true>);
  }
  for (OpKind kind : {OpKind::Gelu, OpKind::Abs}) {
    registry.setGradient(kind, activationGradient<false>);
  }
  registry.setGradient(OpKind::Exp, expGradient);
  registry.setGradient(OpKind::Log, logGradient);
  registry.setGradient(OpKind::Sqrt, sqrtGradient);
  registry.setGradient(OpKind::Affine, affineGradient);
  registry.setGradient(OpKind::Add, binaryGradient);
  registry.setGradient(OpKind::Sub, binaryGradient);
  registry.setGradient(OpKind::Mul, binaryGradient);
  registry.setGradient(OpKind::Div, binaryGradient);
  registry.setWork(OpKind::Relu, work::elementwise<1>);
  registry.setWork(OpKind::Affine, work::elementwise<1>);
  registry.setWork(OpKind::Add, work::elementwise<1>);
  registry.setWork(OpKind::Sub, work::elementwise<1>);
  registry.setWork(OpKind::Mul, work::elementwise<1>);
  registry.setWork(OpKind::Div, work::elementwise<1, VectorOp::Divide>);
  registry.setWork(OpKind::Abs, work::elementwise<1>);
  registry.setWork(OpKind::Sigmoid, work::elementwise<1, VectorOp::Sigmoid>);
  registry.setWork(OpKind::Tanh, work::elementwise<1, VectorOp::Tanh>);
  registry.setWork(OpKind::Exp, work::elementwise<1, VectorOp::Exp>);
  registry.setWork(OpKind::Log, work::elementwise<1, VectorOp::Log>);
  registry.setWork(OpKind::Sqrt, work::elementwise<1, VectorOp::Sqrt>);
  registry.setWork(OpKind::Gelu, work::elementwise<1, VectorOp::Gelu>);
  registry.setWork(OpKind::ActivationGrad, activationGradWork);
  // max(x, 0) and |x|; their gradients, dY where x > 0 (else 0) and dY x sign(x).
  registry.setSelectsInputValues(OpKind::Relu);
  registry.setSelectsInputValues(OpKind::Abs);
  registry.setSelectsInputValues(OpKind::ActivationGrad, [](const Node& node) {
    const std::string& activation = node.attrs().getString("activation");
    return activation == "relu" || activation == "abs";
  });
}

} // namespace popsim::ir::ops
