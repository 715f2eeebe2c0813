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
               " inputs, their gradients, and one placeholder per output.");
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

// The backward's template, in program order: the ops before `boundary` that
// read a placeholder (directly or through another such op), and the ops whose
// results only those ops or the boundary's gradient operands read (what the
// backward computed from saved values alone, such as a sigmoid of the saved
// input). Copying the latter into the backward pass too keeps them out of the
// forward pass's stash, as eager autograd computes them in its backward.
// Random ops, ops with side effects and ops reading a state or a buffer (which
// the program may write between the passes) stay where they ran: a saved dropout mask must
// not be drawn again, nor a buffer read after its update.
std::vector<const Node*> templateNodes(const Graph& graph, const Node& boundary, size_t n,
                                       size_t m) {
  std::vector<const Node*> before;
  for (const auto& node : graph.nodes()) {
    if (node.get() == &boundary) break;
    before.push_back(node.get());
  }
  std::unordered_set<const Node*> chosen;
  std::unordered_set<const Value*> derived;
  for (size_t j = 0; j < m; ++j)
    derived.insert(boundary.input(n + m + j));
  for (const Node* node : before) {
    bool reads = false;
    for (const Value* input : node->inputs())
      reads = reads || derived.count(input) != 0;
    if (!reads) continue;
    chosen.insert(node);
    for (const Value* output : node->outputs())
      derived.insert(output);
  }
  // Read by the template or as a gradient operand of the boundary, and nothing else.
  const auto onlyForGradients = [&](const Value* value) {
    if (value->users().empty() || graph.holds(value)) return false;
    for (const Node* user : value->users()) {
      if (user == &boundary) {
        for (size_t k = 0; k < n + 2 * m; ++k)
          if (boundary.input(k) == value) return false;
      } else if (chosen.count(user) == 0) {
        return false;
      }
    }
    return true;
  };
  for (auto it = before.rbegin(); it != before.rend(); ++it) {
    const Node* node = *it;
    bool readsState = false;
    for (const Value* input : node->inputs()) {
      readsState = readsState || input->role() == ValueRole::State ||
                   (input->role() == ValueRole::Weight && !input->trainable()); // a buffer
    }
    if (chosen.count(node) != 0 || node->outputs().empty() || node->hasSideEffects() ||
        opFamily(node->kind()) == OpFamily::Random || readsState) {
      continue;
    }
    bool only = true;
    for (const Value* output : node->outputs())
      only = only && onlyForGradients(output);
    if (only) chosen.insert(node);
  }
  std::vector<const Node*> nodes;
  for (const Node* node : before)
    if (chosen.count(node) != 0) nodes.push_back(node);
  return nodes;
}

// Copies the template for every input that needs a gradient, in the backward
// pass, with each output's gradient in place of its placeholder (zeros when
// the loss does not depend on that output, as eager autograd materialises
// them). What the template reads from the forward pass (saved values) is read
// from there.
Grads customGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  const Node& node = nodeOf(b);
  const auto n = static_cast<size_t>(node.attrs().getInt("inputs"));
  const size_t m = node.outputs().size();
  std::unordered_map<const Value*, Value*> copies;
  for (size_t j = 0; j < m; ++j) {
    const Value* placeholder = node.input(n + m + j);
    copies[placeholder] = g[j] != nullptr ? g[j] : b.zerosOf(placeholder->type());
  }
  for (const Node* op : templateNodes(b.graph(), node, n, m)) {
    if (op->kind() == OpKind::GradientPlaceholder) continue;
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
