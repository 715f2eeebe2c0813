#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"
#include "ir/pointwise_functions.h"
#include "ir/vector_arithmetic.h"

namespace popsim::ir::ops {
namespace {

// The function the attributes name, with as many params as it takes.
void checkFunction(const Attributes& attrs) {
  const std::string& name = attrs.getString("function");
  const PointwiseFunction* function = findPointwiseFunction(name);
  POPSIM_CHECK(function != nullptr, ErrorKind::Compilation, "unknown pointwise function '", name,
               "'.");
  POPSIM_CHECK(attrs.getFloats("params").size() == function->parameters.size(),
               ErrorKind::Compilation, name, " takes ", function->parameters.size(),
               " parameter(s), got ", attrs.getFloats("params").size(), ".");
}

// pointwise(X) {function, params} -> f(X) elementwise, float32.
std::vector<TensorType> inferPointwise(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  checkFunction(attrs);
  requireFloat(inputs[0], "input 0 (input)");
  return {inputs[0]};
}

// pointwise_grad(dY, X) {function, params} -> dY * f'(X).
std::vector<TensorType> inferPointwiseGrad(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  checkFunction(attrs);
  requireFloat(inputs[0], "input 0 (grad_output)");
  requireFloat(inputs[1], "input 1 (input)");
  POPSIM_CHECK(inputs[0].shape == inputs[1].shape, ErrorKind::Compilation, "grad_output ",
               inputs[0].str(), " and input ", inputs[1].str(), " differ in shape.");
  return {inputs[0]};
}

// The functions of ir/pointwise_functions.h: dx = dy * f'(x).
Grads pointwiseGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (needed[0]) {
    result[0] = b.emit(OpKind::PointwiseGrad, {g[0], in(b, 0)},
                       copyAttrs(nodeOf(b).attrs(), {"function", "params"}));
  }
  return result;
}

// One vertex each: the function's operations per element (vector_arithmetic.h).
OpWork pointwiseWork(const Node& node) {
  return work::elementwiseFunction(node,
                                   pointwiseArithmetic(node.attrs().getString("function")).value);
}

OpWork pointwiseGradWork(const Node& node) {
  return work::elementwiseFunction(
      node, pointwiseArithmetic(node.attrs().getString("function")).gradient[0]);
}

} // namespace

void registerPointwiseOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"function", AttrType::String},
                                       {"params", AttrType::Floats}};
  registry.add(OpKind::Pointwise, 1, 1, {"input"}, attrs, inferPointwise);
  registry.add(OpKind::PointwiseGrad, 2, 2, {"grad_output", "input"}, attrs, inferPointwiseGrad);
  registry.setGradient(OpKind::Pointwise, pointwiseGradient);
  registry.setWork(OpKind::Pointwise, pointwiseWork);
  registry.setWork(OpKind::PointwiseGrad, pointwiseGradWork);
}

} // namespace popsim::ir::ops
