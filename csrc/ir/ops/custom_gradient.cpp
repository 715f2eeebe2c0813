// A gradient the model gives itself: a torch.autograd.Function's backward.
//
// The Python side traces the Function's forward as ordinary ops (under
// no_grad, so nothing differentiates them) and its backward on placeholders
// for the outputs' gradients; the backward's ops, the template, sit in the
// forward program until autodiff, which copies them for each use with the
// real output gradients in place of the placeholders. Then the boundary and
// the template leave the program (compiler/training/custom_gradients.cpp),
// so neither op ever runs, and neither costs anything.

#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

#include <unordered_map>
#include <unordered_set>

namespace popsim::ir::ops {
namespace {

// gradient_placeholder(Y) -> a value of Y's type: where the gradient of the
// output Y enters a custom gradient's template.
std::vector<TensorType> inferPlaceholder(const std::vector<TensorType>& inputs, const Attributes&) {
  return {inputs[0]};
}

// custom_gradient(X[0..n), Y[0..m), P[0..m), G[0..n)) {inputs: n, name} ->
// Y': the outputs Y of a custom Function's forward, passed through, whose
// gradient with respect to X[i] is G[i] with each placeholder P[j] standing
// for the gradient of Y'[j]. G[i] has X[i]'s type (the Python side sums and
// casts the backward's results as eager autograd does).
std::vector<TensorType> inferCustomGradient(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  const auto n = static_cast<size_t>(attrs.getInt("inputs"));
  const std::string& name = attrs.getString("name");
  POPSIM_CHECK(n >= 1 && inputs.size() > 2 * n && (inputs.size() - 2 * n) % 2 == 0,
               ErrorKind::Compilation, "custom_gradient of ", name, ": ", inputs.size(),
               " operands do not hold ", n,
               " inputs, their gradients, and one placeholder per "
               "output.");
  const size_t m = (inputs.size() - 2 * n) / 2;
  for (size_t j = 0; j < m; ++j) {
    POPSIM_CHECK(inputs[n + j] == inputs[n + m + j], ErrorKind::Compilation, "custom_gradient of ",
                 name, ": output ", j, " is ", inputs[n + j].str(),
                 " but its gradient's placeholder is ", inputs[n + m + j].str(), ".");
  }
  for (size_t i = 0; i < n; ++i) {
    POPSIM_CHECK(inputs[i] == inputs[n + 2 * m + i], ErrorKind::Compilation, "custom_gradient of ",
                 name, ": input ", i, " is ", inputs[i].str(), " but its gradient is ",
                 inputs[n + 2 * m + i].str(), ".");
  }
  return {inputs.begin() + static_cast<std::ptrdiff_t>(n),
          inputs.begin() + static_cast<std::ptrdiff_t>(n + m)};
}

// The nodes before `boundary` whose values depend on `sources`, in program order.
std::vector<const Node*> dependentNodes(const Graph& graph, const Node& boundary,
                                        std::unordered_set<const Value*> sources) {
  std::vector<const Node*> nodes;
  for (const auto& node : graph.nodes()) {
    if (node.get() == &boundary) break;
    bool depends = false;
    for (const Value* input : node->inputs())
      depends = depends || sources.count(input) != 0;
    if (!depends) continue;
    nodes.push_back(node.get());
    for (const Value* output : node->outputs())
      sources.insert(output);
  }
  return nodes;
}

// Copies the template for every input that needs a gradient: each op that
// reads a placeholder (directly or through another such op) once more, in
// the backward pass, reading the output's gradient (zeros when the loss does
// not depend on that output, as eager autograd materialises them). Ops of
// the backward that read only saved values are not copied: they ran in the
// forward pass, and their results are read from there.
Grads customGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  const Node& node = nodeOf(b);
  const auto n = static_cast<size_t>(node.attrs().getInt("inputs"));
  const size_t m = node.outputs().size();
  std::unordered_map<const Value*, Value*> copies;
  for (size_t j = 0; j < m; ++j) {
    const Value* placeholder = node.input(n + m + j);
    copies[placeholder] = g[j] != nullptr ? g[j] : b.zerosOf(placeholder->type());
  }
  std::unordered_set<const Value*> placeholders;
  for (const auto& [placeholder, gradient] : copies)
    placeholders.insert(placeholder);
  for (const Node* op : dependentNodes(b.graph(), node, placeholders)) {
    std::vector<Value*> inputs;
    for (Value* input : op->inputs()) {
      auto copy = copies.find(input);
      inputs.push_back(copy != copies.end() ? copy->second : input);
    }
    const std::vector<Value*> outputs = b.emitMulti(op->kind(), inputs, op->attrs());
    for (size_t k = 0; k < outputs.size(); ++k)
      copies[op->output(k)] = outputs[k];
  }
  Grads result = none(b);
  for (size_t i = 0; i < n; ++i) {
    if (!needed[i]) continue;
    Value* gradient = node.input(n + 2 * m + i);
    auto copy = copies.find(gradient);
    result[i] = copy != copies.end() ? copy->second : gradient;
  }
  return result;
}

} // namespace

void registerCustomGradientOps(OpRegistry& registry) {
  registry.add(OpKind::GradientPlaceholder, 1, 1, {"like"}, {}, inferPlaceholder);
  registry.add(OpKind::CustomGradient, 4, -1, {"inputs"},
               {{"inputs", AttrType::Int}, {"name", AttrType::String}}, inferCustomGradient);
  registry.setGradient(OpKind::CustomGradient, customGradient);
  for (OpKind kind : {OpKind::GradientPlaceholder, OpKind::CustomGradient})
    registry.setWork(kind, [](const Node&) { return OpWork{}; });
}

} // namespace popsim::ir::ops
