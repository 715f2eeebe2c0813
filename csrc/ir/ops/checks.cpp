#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// check_range(X) {min, max, what} -> X unchanged, after checking at run time
// that every element lies in [min, max] (NaN does not): the checks PyTorch's
// kernels make on their inputs (binary_cross_entropy's probabilities), as an
// ExecutionError that says `what` was violated.
std::vector<TensorType> inferCheckRange(const std::vector<TensorType>& inputs,
                                        const Attributes& attrs) {
  requireDType(inputs[0], DType::Float32, "input 0 (input)");
  POPSIM_CHECK(attrs.getFloat("min") <= attrs.getFloat("max"), ErrorKind::Compilation,
               "check_range needs min <= max, got [", attrs.getFloat("min"), ", ",
               attrs.getFloat("max"), "].");
  return {inputs[0]};
}

// no_derivative(X) {what, hint} -> X, a view: marks a result PyTorch has no
// derivative for (its backward raises); training through it is an error
// naming `what`, with `hint`. Layout simplification removes it once
// gradients are built.
std::vector<TensorType> inferNoDerivative(const std::vector<TensorType>& inputs,
                                          const Attributes&) {
  return {inputs[0]};
}

} // namespace

void registerCheckOps(OpRegistry& registry) {
  registry.add(OpKind::NoDerivative, 1, 1, {"input"},
               {{"what", AttrType::String}, {"hint", AttrType::String}}, inferNoDerivative);
  registry.setView(OpKind::NoDerivative);
  registry.add(OpKind::CheckRange, 1, 1, {"input"},
               {{"min", AttrType::Float}, {"max", AttrType::Float}, {"what", AttrType::String}},
               inferCheckRange);
}

} // namespace popsim::ir::ops
