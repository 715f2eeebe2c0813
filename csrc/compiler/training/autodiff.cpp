// Reverse-mode automatic differentiation on the IR.
//
// 1. Layer norms and max pools that gradients flow through become their
//    training forms, which keep what the gradient needs (statistics, where
//    each maximum is), in place, before their users.
// 2. A value needs a gradient if it is a float value computed from one of the
//    `wrt` values (not through a stop_gradient) and the loss depends on it.
// 3. The loss's gradient is 1. Forward nodes are visited last to first; a node
//    with an output gradient gets its op's gradient rule (its family's file
//    in ir/ops declares it with the schema)
//    applied for the inputs that need a gradient, and gradients of values used
//    several times are summed.
// 4. torch.autograd.Functions' gradient boundaries and backward templates,
//    copied in step 3 where gradients flow, leave the graph.
// 5. The gradients of the `wrt` values are returned (values the loss does not
//    depend on get none, as PyTorch leaves their .grad as None).

#include "compiler/training/autodiff.h"
#include "compiler/training/custom_gradients.h"

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"
#include "compiler/training/weight_sharding.h"
#include "ir/gradient_builder.h"
#include "ir/op_schema.h"

#include <optional>
#include <unordered_set>

namespace popsim::compiler {
namespace {

using ValueSet = std::unordered_set<const ir::Value*>;

bool isFloat(const ir::Value* value) { return ir::isFloat(value->type().dtype); }

std::vector<ir::Node*> forwardNodes(const ir::Graph& graph) {
  std::vector<ir::Node*> nodes;
  for (const auto& node : graph.nodes()) {
    if (node->placement().phase == ir::Phase::Forward) {
      nodes.push_back(node.get());
    }
  }
  return nodes;
}

ValueSet dependentsOf(const std::vector<ir::Node*>& nodes, const std::vector<ir::Value*>& wrt) {
  ValueSet dependents(wrt.begin(), wrt.end());
  for (const ir::Node* node : nodes) {
    bool depends = false;
    for (const ir::Value* input : node->inputs()) {
      if (node->kind() == ir::OpKind::StopGradient) break;
      depends = depends || dependents.count(input) != 0;
    }
    if (depends) {
      for (const ir::Value* output : node->outputs()) {
        if (isFloat(output)) dependents.insert(output);
      }
    }
  }
  return dependents;
}

ValueSet dependenciesOf(const ir::Value* loss) {
  ValueSet dependencies;
  std::vector<const ir::Value*> stack = {loss};
  while (!stack.empty()) {
    const ir::Value* value = stack.back();
    stack.pop_back();
    if (!dependencies.insert(value).second || value->producer() == nullptr) {
      continue;
    }
    for (const ir::Value* input : value->producer()->inputs()) {
      stack.push_back(input);
    }
  }
  return dependencies;
}

std::optional<ir::OpKind> trainingForm(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::LayerNorm: return ir::OpKind::LayerNormTrain;
  case ir::OpKind::MaxPool2d: return ir::OpKind::MaxPool2dTrain;
  default: return std::nullopt;
  }
}

// Step 1: layer_norm -> layer_norm_train, max_pool2d -> max_pool2d_train
// where gradients flow.
void useTrainingForms(ir::Graph& graph, const std::vector<ir::Value*>& wrt) {
  const std::vector<ir::Node*> nodes = forwardNodes(graph);
  const ValueSet dependents = dependentsOf(nodes, wrt);
  for (ir::Node* node : nodes) {
    const std::optional<ir::OpKind> form = trainingForm(node->kind());
    if (!form || dependents.count(node->output()) == 0) {
      continue;
    }
    graph.setInsertionPoint(node);
    ir::Node* training = graph.addNode(*form, node->inputs(), node->attrs(), node->location());
    training->setPlacement(node->placement());
    graph.setInsertionPoint(nullptr);
    graph.replaceAllUsesWith(node->output(), training->output(0));
  }
}

[[noreturn]] void noGradientRule(const ir::Node& node) {
  throwError(ErrorKind::Unsupported,
             strCat("Unsupported op in the backward pass: popsim has no gradient for ", node.name(),
                    node.location().known() ? " at " + node.location().str() : std::string(),
                    ", which lies between the trained weights and the loss. Compute it outside the "
                    "training model, or detach its input if it needs no gradient."));
}

} // namespace

std::unordered_map<const ir::Value*, ir::Value*> buildGradients(ir::Graph& graph, ir::Value* loss,
                                                                const std::vector<ir::Value*>& wrt,
                                                                ir::Value* seed) {
  POPSIM_ASSERT(loss != nullptr && loss->type().rank() == 0 && isFloat(loss),
                "gradients need a scalar float loss.");
  POPSIM_ASSERT(seed == nullptr || seed->type() == loss->type(), "a loss gradient seed of type ",
                seed != nullptr ? seed->type().str() : "", ".");
  useTrainingForms(graph, wrt);
  const std::vector<ir::Node*> nodes = forwardNodes(graph);
  const ValueSet dependents = dependentsOf(nodes, wrt);
  const ValueSet dependencies = dependenciesOf(loss);
  auto needsGradient = [&](const ir::Value* value) {
    return dependents.count(value) != 0 && dependencies.count(value) != 0 && isFloat(value);
  };

  std::unordered_map<const ir::Value*, ir::Value*> grads;
  grads[loss] = seed != nullptr ? seed : graph.addScalarConstant(1.0f, loss->type().dtype);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ir::Node& node = **it;
    std::vector<ir::Value*> outputGrads;
    bool anyOutput = false;
    for (const ir::Value* output : node.outputs()) {
      auto grad = grads.find(output);
      outputGrads.push_back(grad == grads.end() ? nullptr : grad->second);
      anyOutput = anyOutput || grad != grads.end();
    }
    std::vector<bool> needed;
    bool anyInput = false;
    for (const ir::Value* input : node.inputs()) {
      needed.push_back(needsGradient(input));
      anyInput = anyInput || needed.back();
    }
    if (!anyOutput || !anyInput) {
      continue;
    }
    const ir::GradientRule rule = node.schema().gradient;
    if (rule == nullptr) {
      noGradientRule(node);
    }
    ir::GradientBuilder builder(graph, node);
    const std::vector<ir::Value*> inputGrads = rule(builder, outputGrads, needed);
    POPSIM_ASSERT(inputGrads.size() == node.inputs().size(), "the gradient rule of ", node.name(),
                  " returned ", inputGrads.size(), " gradients.");
    for (size_t i = 0; i < inputGrads.size(); ++i) {
      if (!needed[i] || inputGrads[i] == nullptr) {
        continue;
      }
      ir::Value*& total = grads[node.input(i)];
      total =
          total == nullptr ? inputGrads[i] : builder.emit(ir::OpKind::Add, {total, inputGrads[i]});
    }
  }
  removeCustomGradients(graph);
  std::unordered_map<const ir::Value*, ir::Value*> result;
  for (const ir::Value* value : wrt) {
    auto grad = grads.find(value);
    if (grad != grads.end() && grad->second != nullptr) {
      result[value] = grad->second;
    }
  }
  return result;
}

namespace {

// The autodiff pass: the gradient of every trained parameter (of the whole
// gathered weight for a sharded one) into the graph's gradient map, from the
// seed 1 (loss scaling changes it later); the anchored gradients become
// outputs after the model's.
bool differentiate(ir::Graph& graph, PassContext& context) {
  const TrainingConfig& config = context.training();
  ir::Value* loss = graph.loss();
  POPSIM_ASSERT(loss != nullptr, "a training program needs a loss.");
  std::vector<ir::Value*> params;
  std::vector<ir::Value*> wrt;
  for (const auto& [param, group] : training::trainedParameters(graph, config)) {
    params.push_back(param);
    ir::Value* whole = gatheredWeight(*param);
    wrt.push_back(whole != nullptr ? whole : param);
  }
  ir::Value* seed = graph.addScalarConstant(1.0f, loss->type().dtype);
  const auto grads = buildGradients(graph, loss, wrt, seed);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto grad = grads.find(wrt[i]);
    if (grad != grads.end()) graph.setGradient(params[i], grad->second);
  }
  graph.setGradientSeed(seed);
  for (const std::string& name : config.anchoredGradients) {
    const ir::Value* weight = graph.findWeight(name);
    ir::Value* grad = weight != nullptr ? graph.gradientOf(weight) : nullptr;
    POPSIM_CHECK_OPTION(grad != nullptr, "anchorTensor", "anchorTensor: 'Gradient___", name,
                        "' names no parameter that the optimizer trains and the loss depends on",
                        weight == nullptr ? " (the program has no weight of that name)" : "",
                        ". Anchor the gradient of a trained parameter, as model.named_parameters() "
                        "names it.");
    graph.addOutput(grad);
  }
  return true;
}

} // namespace

std::unique_ptr<Pass> createAutodiffPass() {
  return std::make_unique<FunctionPass>("autodiff", differentiate);
}

} // namespace popsim::compiler
