#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// check_range(X) {min, max, what} -> X unchanged, after checking at run time
// that every element lies in [min, max] (NaN does not): the checks PyTorch's
// kernels make on their inputs (binary_cross_entropy's probabilities), and
// the ones popsim's compiled shapes need (bincount's values), as an
// ExecutionError that says `what` was violated. X is float, int32 or int64.
// check_range(X, Y) checks X and returns Y unchanged: a check whose value
// nothing else reads (a guard on a Python value the trace fixed) stays in
// the program through the result it passes on.
std::vector<TensorType> inferCheckRange(const std::vector<TensorType>& inputs,
                                        const Attributes& attrs) {
  POPSIM_CHECK(isFloat(inputs[0].dtype) || inputs[0].dtype == DType::Int64 ||
                   inputs[0].dtype == DType::Int32,
               ErrorKind::Compilation, "check_range checks float, int32 or int64 tensors, got ",
               inputs[0].str(), ".");
  POPSIM_CHECK(attrs.getFloat("min") <= attrs.getFloat("max"), ErrorKind::Compilation,
               "check_range needs min <= max, got [", attrs.getFloat("min"), ", ",
               attrs.getFloat("max"), "].");
  return {inputs.back()};
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

// check_range and recomputation_checkpoint pass their input through, and so
// the gradient (check_range(X, Y) to Y; X, only checked, has none).
Grads passThroughGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  if (nodeOf(b).inputs().size() == 1) return {g[0]};
  Grads result = none(b);
  result[1] = g[0];
  return result;
}

// print_tensor: the gradient passes through, printed as "<title>_gradient"
// when print_gradient is set (as PopTorch's ipu_print_tensor does).
Grads printTensorGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  const Attributes& attrs = nodeOf(b).attrs();
  if (!attrs.getBool("print_gradient")) return {g[0]};
  Attributes printed = attrs;
  printed.set("title", attrs.getString("title") + "_gradient");
  printed.set("print_gradient", false);
  return {b.emit(OpKind::PrintTensor, {g[0]}, printed)};
}

// no_derivative: training through what it marks is an error, as PyTorch's
// backward raises there.
Grads noDerivativeGradient(GradientBuilder& b, const Grads&, const Needed&) {
  const ir::Node& node = nodeOf(b);
  throwError(ErrorKind::Unsupported,
             strCat("Unsupported op in the backward pass: ", node.attrs().getString("what"),
                    node.location().known() ? " at " + node.location().str() : std::string(),
                    " has no derivative (PyTorch's backward raises here too) and lies between the "
                    "trained weights and the loss. ",
                    node.attrs().getString("hint")));
}

// The tensor streams to the host, which prints it.
OpWork printWork(const Node& node) {
  OpWork work;
  work.hostTransfer = true;
  work.hostBytes = node.output()->type().bytes();
  return work;
}

} // namespace

void registerCheckOps(OpRegistry& registry) {
  registry.add(OpKind::NoDerivative, 1, 1, {"input"},
               {{"what", AttrType::String}, {"hint", AttrType::String}}, inferUnchangedView);
  registry.setView(OpKind::NoDerivative);
  registry.add(OpKind::CheckRange, 1, 2, {"input", "result"},
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
  registry.setGradient(OpKind::CheckRange, passThroughGradient);
  registry.setGradient(OpKind::RecomputationCheckpoint, passThroughGradient);
  registry.setGradient(OpKind::PrintTensor, printTensorGradient);
  registry.setGradient(OpKind::NoDerivative, noDerivativeGradient);
  registry.setWork(OpKind::CheckRange, work::elementwise<1>);
  registry.setWork(OpKind::PrintTensor, printWork);
}

} // namespace popsim::ir::ops
