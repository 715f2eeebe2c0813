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
  requireFloat(inputs[0], "input 0 (input)");
  POPSIM_CHECK(attrs.getFloat("min") <= attrs.getFloat("max"), ErrorKind::Compilation,
               "check_range needs min <= max, got [", attrs.getFloat("min"), ", ",
               attrs.getFloat("max"), "].");
  return {inputs[0]};
}

// A view of its input: no_derivative(X) {what, hint} marks a result PyTorch
// has no derivative for (its backward raises; training through it is an
// error naming `what`, with `hint`; layout simplification removes it once
// gradients are built), and recomputation_checkpoint(X) a value recomputation
// keeps (stashes) instead of recomputing (PopTorch's recomputationCheckpoint).
std::vector<TensorType> inferUnchangedView(const std::vector<TensorType>& inputs,
                                           const Attributes&) {
  return {inputs[0]};
}

// print_tensor(X) {title, print_gradient, format...} -> X unchanged, after
// printing it on the host each time it runs (PopTorch's ipu_print_tensor).
std::vector<TensorType> inferPrintTensor(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  POPSIM_CHECK(attrs.getInt("edge_items") >= 1 && attrs.getInt("summarise_threshold") >= 0 &&
                   attrs.getInt("max_line_width") >= 0 && attrs.getInt("digits") >= 0,
               ErrorKind::Compilation,
               "print_tensor needs edge_items >= 1 and summarise_threshold, max_line_width "
               "and digits >= 0.");
  const std::string& format = attrs.getString("float_format");
  POPSIM_CHECK(format == "auto" || format == "fixed" || format == "scientific" || format == "none",
               ErrorKind::Compilation,
               "print_tensor float_format must be auto, fixed, scientific or none, got \"", format,
               "\".");
  return {inputs[0]};
}

} // namespace

void registerCheckOps(OpRegistry& registry) {
  registry.add(OpKind::NoDerivative, 1, 1, {"input"},
               {{"what", AttrType::String}, {"hint", AttrType::String}}, inferUnchangedView);
  registry.setView(OpKind::NoDerivative);
  registry.add(OpKind::CheckRange, 1, 1, {"input"},
               {{"min", AttrType::Float}, {"max", AttrType::Float}, {"what", AttrType::String}},
               inferCheckRange);
  registry.add(OpKind::PrintTensor, 1, 1, {"input"},
               {{"title", AttrType::String},
                {"print_gradient", AttrType::Bool},
                {"summarise_threshold", AttrType::Int},
                {"edge_items", AttrType::Int},
                {"max_line_width", AttrType::Int},
                {"digits", AttrType::Int},
                {"float_format", AttrType::String},
                {"separator", AttrType::String},
                {"open_bracket", AttrType::String},
                {"close_bracket", AttrType::String}},
               inferPrintTensor);
  registry.add(OpKind::RecomputationCheckpoint, 1, 1, {"input"}, {}, inferUnchangedView);
  registry.setView(OpKind::RecomputationCheckpoint);
}

} // namespace popsim::ir::ops
