// The optimizer step, once per step in each IPU's Update phase:
// 1. per parameter group, its hyper-parameters (a float64 vector state the
//    host writes, so setOptimizer needs no recompilation) and, for the
//    optimizers that count steps, a step count advanced once per step; each
//    IPU holding parameters of the group has its own copies;
// 2. per parameter with a gradient in the map, its optimizer state (float32,
//    of the updated tensor's shape) and one fused update op reading the
//    map's gradient (SGD, Adam/AdamW, RMSprop, LAMB):
//    - on the weight itself;
//    - for a sharded optimizer state, on this replica's shard of the weight
//      (a weight_shard state), whose updated shards are gathered back into
//      the weight;
//    - for a weight stored as its shard, on the stored shard in place;
// 3. the parameter's accumulator (with gradient accumulation) cleared;
// 4. the gradient map consumed: a finished program has none.
// Parameters the loss does not depend on get no update, as in PyTorch.

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"
#include "ir/optimizer_hyperparameters.h"

#include <algorithm>
#include <unordered_map>

namespace popsim::compiler {
namespace {

using training::addNode;
using training::collectiveAttrs;
using training::float32Like;
using training::inPhase;
using training::isSharded;
using training::placementOf;
using training::ReplicatedState;

size_t hyperCount(OptimizerKind optimizer) {
  switch (optimizer) {
  case OptimizerKind::Sgd: return ir::hyper::SgdCount;
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW: return ir::hyper::AdamCount;
  case OptimizerKind::Rmsprop: return ir::hyper::RmspropCount;
  case OptimizerKind::Lamb: return ir::hyper::LambCount;
  }
  return 0;
}

// Adam uses the step count for its bias corrections and SGD's momentum to
// tell the first step; RMSprop only records it, as PyTorch does.
bool needsStep(const TrainingConfig& config, const ParameterGroup& group) {
  return config.optimizer != OptimizerKind::Sgd || group.hasMomentum;
}

// The update op of one parameter, with the state it needs created on the way:
// it updates `target` in place (the parameter, or this replica's shard of
// it), and its state has the target's shape, in float32 (float16 for the
// keys of TrainingConfig::halfStates).
void addUpdate(ir::Graph& graph, const TrainingConfig& config, const ParameterGroup& group,
               ir::Value* param, ir::Value* target, ir::Value* grad, ir::Value* hyper,
               ir::Value* step) {
  std::vector<ir::Value*> states;
  for (const std::string& key : parameterStateKeys(config.optimizer, group)) {
    const bool half = std::find(config.halfStates.begin(), config.halfStates.end(), key) !=
                      config.halfStates.end();
    states.push_back(graph.addState(ir::parameterStateName(param->name(), key),
                                    half ? ir::TensorType{ir::DType::Float16, target->type().shape}
                                         : float32Like(target->type()),
                                    ir::StateKind::Optimizer));
  }
  const auto inputs = [&](std::vector<ir::Value*> first) {
    first.insert(first.end(), states.begin(), states.end());
    return first;
  };
  const ir::Placement where = inPhase(placementOf(param), ir::Phase::Update);
  switch (config.optimizer) {
  case OptimizerKind::Sgd: {
    std::vector<ir::Value*> operands = inputs({target, grad, hyper});
    if (group.hasMomentum) operands.push_back(step);
    addNode(graph, ir::OpKind::SgdUpdate, operands,
            {{"nesterov", group.nesterov}, {"maximize", group.maximize}}, ir::Phase::Update, where);
    return;
  }
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
    addNode(graph, ir::OpKind::AdamUpdate, inputs({target, grad, hyper, step}),
            {{"amsgrad", group.amsgrad},
             {"maximize", group.maximize},
             {"decoupled_weight_decay", config.optimizer == OptimizerKind::AdamW},
             {"bias_correction", group.biasCorrection}},
            ir::Phase::Update, where);
    return;
  case OptimizerKind::Rmsprop:
    addNode(graph, ir::OpKind::RmspropUpdate, inputs({target, grad, hyper}),
            {{"centered", group.centered},
             {"has_momentum", group.hasMomentum},
             {"maximize", group.maximize},
             {"tf_variant", group.tfVariant}},
            ir::Phase::Update, where);
    return;
  case OptimizerKind::Lamb:
    if (isSharded(config, param)) { // a shard: the trust ratio needs the whole norms
      ir::Attributes attrs = collectiveAttrs(config, param->name() + "/lamb_norms");
      attrs.set("bias_correction", group.biasCorrection);
      addNode(graph, ir::OpKind::LambUpdateSharded, inputs({target, grad, hyper, step}),
              std::move(attrs), ir::Phase::Update, where);
      return;
    }
    addNode(graph, ir::OpKind::LambUpdate, inputs({target, grad, hyper, step}),
            {{"bias_correction", group.biasCorrection}}, ir::Phase::Update, where);
    return;
  }
}

// A sharded parameter's update: this replica's shard of the weight (kept in
// a state of the shard's size) updated from its shard of the gradient, and
// all the replicas' updated shards gathered into the weight.
void addShardedUpdate(ir::Graph& graph, const TrainingConfig& config, const ParameterGroup& group,
                      ir::Value* param, ir::Value* gradShard, ir::Value* hyper, ir::Value* step) {
  const ir::Placement where = inPhase(placementOf(param), ir::Phase::Update);
  // The weight's dtype (a float16 weight's shard is float16), the gradient
  // shard's shape.
  ir::Value* shard = graph.addState(ir::parameterStateName(param->name(), "weight_shard"),
                                    ir::TensorType{param->type().dtype, gradShard->type().shape},
                                    ir::StateKind::Optimizer);
  ir::Value* mine = addNode(graph, ir::OpKind::ReplicaShard, {param},
                            collectiveAttrs(config, param->name() + "/shard"), where.phase, where)
                        ->output();
  addNode(graph, ir::OpKind::Assign, {shard, mine}, {}, where.phase, where);
  addUpdate(graph, config, group, param, shard, gradShard, hyper, step);
  ir::Attributes gather = collectiveAttrs(config, param->name() + "/all_gather");
  gather.set("shape", param->type().shape);
  ir::Value* whole =
      addNode(graph, ir::OpKind::ReplicaAllGather, {shard}, gather, where.phase, where)->output();
  addNode(graph, ir::OpKind::Assign, {param, whole}, {}, where.phase, where);
}

bool stepOptimizer(ir::Graph& graph, PassContext& context) {
  const TrainingConfig& config = context.training();
  std::unordered_map<const ir::Value*, size_t> groupOf;
  for (const auto& [param, group] : training::trainedParameters(graph, config)) {
    groupOf[param] = group;
  }
  const std::vector<ir::Graph::Gradient> gradients = graph.gradients();
  for (size_t g = 0; g < config.groups.size(); ++g) {
    const ParameterGroup& group = config.groups[g];
    // Step 1 (the states are made where the first parameter asks for them).
    ReplicatedState hyper(
        graph, ir::groupStateName(g, "hyper"),
        {ir::DType::Float64, {static_cast<int64_t>(hyperCount(config.optimizer))}},
        ir::StateKind::Optimizer);
    ReplicatedState step(graph, ir::groupStateName(g, "step"), {ir::DType::Int64, {}},
                         ir::StateKind::Optimizer);
    for (const auto& [param, grad] : gradients) {
      const auto found = groupOf.find(param);
      POPSIM_ASSERT(found != groupOf.end(), "the gradient map names '", param->name(),
                    "', which no parameter group trains.");
      if (found->second != g) continue;
      const ir::Placement where = inPhase(placementOf(param), ir::Phase::Update);
      ir::Value* stepCount = nullptr;
      if (needsStep(config, group)) {
        bool created = false;
        stepCount = step.on(where.ipu, &created);
        if (created) training::increment(graph, stepCount, where);
      }
      // Step 2.
      if (training::isStoredSharded(config, param)) {
        addUpdate(graph, config, group, param, param, grad, hyper.on(where.ipu), stepCount);
      } else if (isSharded(config, param)) {
        addShardedUpdate(graph, config, group, param, grad, hyper.on(where.ipu), stepCount);
      } else {
        addUpdate(graph, config, group, param, param, grad, hyper.on(where.ipu), stepCount);
      }
      // Step 3.
      if (ir::Value* accumulator =
              graph.findState(ir::parameterStateName(param->name(), "accumulator"))) {
        addNode(graph, ir::OpKind::Fill, {accumulator}, {{"value", 0.0}}, ir::Phase::Update, where);
      }
    }
  }
  // Step 4.
  graph.clearGradients();
  return true;
}

} // namespace

std::vector<std::string> parameterStateKeys(OptimizerKind optimizer, const ParameterGroup& group) {
  std::vector<std::string> keys;
  switch (optimizer) {
  case OptimizerKind::Sgd:
    if (group.hasMomentum) keys.push_back("momentum_buffer");
    break;
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW:
    keys = {"exp_avg", "exp_avg_sq"};
    if (group.amsgrad) keys.push_back("max_exp_avg_sq");
    break;
  case OptimizerKind::Rmsprop:
    keys = {"square_avg"};
    if (group.centered) keys.push_back("grad_avg");
    if (group.hasMomentum) keys.push_back("momentum_buffer");
    break;
  case OptimizerKind::Lamb: keys = {"exp_avg", "exp_avg_sq"}; break;
  }
  return keys;
}

std::vector<std::string> stateKeysTypedBy(OptimizerKind optimizer, StateTypeArgument argument) {
  switch (argument) {
  case StateTypeArgument::Velocity:
    if (optimizer == OptimizerKind::Sgd) return {"momentum_buffer"};
    return {};
  case StateTypeArgument::FirstOrderMomentum:
    if (optimizer == OptimizerKind::Rmsprop) return {"momentum_buffer", "grad_avg"};
    if (optimizer == OptimizerKind::Sgd) return {};
    return {"exp_avg"};
  case StateTypeArgument::SecondOrderMomentum:
    switch (optimizer) {
    case OptimizerKind::Sgd: return {};
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: return {"exp_avg_sq", "max_exp_avg_sq"};
    case OptimizerKind::Lamb: return {"exp_avg_sq"};
    case OptimizerKind::Rmsprop: return {"square_avg"};
    }
  }
  return {};
}

double initialStateValue(const ParameterGroup& group, const std::string& key) {
  // TensorFlow's RMSprop starts its square averages at one (PopTorch's use_tf_variant).
  return key == "square_avg" && group.tfVariant ? 1.0 : 0.0;
}

std::vector<std::string> hyperParameterNames(OptimizerKind optimizer) {
  switch (optimizer) {
  case OptimizerKind::Sgd: return {"lr", "momentum", "dampening", "weight_decay", "grad_scale"};
  case OptimizerKind::Adam:
  case OptimizerKind::AdamW: return {"lr", "beta1", "beta2", "eps", "weight_decay", "grad_scale"};
  case OptimizerKind::Rmsprop:
    return {"lr", "alpha", "eps", "weight_decay", "momentum", "grad_scale"};
  case OptimizerKind::Lamb:
    return {"lr", "beta1", "beta2", "eps", "weight_decay", "max_weight_norm", "grad_scale"};
  }
  return {};
}

std::unique_ptr<Pass> createOptimizerStepPass() {
  return std::make_unique<FunctionPass>("optimizer-step", stepOptimizer);
}

} // namespace popsim::compiler
