#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

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

} // namespace

void registerElementwiseOps(OpRegistry& registry) {
  for (OpKind kind : {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh, OpKind::Exp, OpKind::Log,
                      OpKind::Sqrt, OpKind::Abs}) {
    registry.add(kind, 1, 1, {"input"}, {}, inferUnary);
  }
  registry.add(OpKind::Gelu, 1, 1, {"input"}, {{"approximate", AttrType::String}}, inferGelu);
  // affine(x) = scale * x + shift: what scalar arithmetic (x * 2, x + 1, x / 8) lowers to.
  registry.add(OpKind::Affine, 1, 1, {"input"},
               {{"scale", AttrType::Float}, {"shift", AttrType::Float}}, inferAffine);
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    registry.add(kind, 2, 2, {"a", "b"}, {}, inferBinary);
  }
}

} // namespace popsim::ir::ops
