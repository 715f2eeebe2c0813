// Training program construction (see training_program.h for the steps).

#include "compiler/training/training_program.h"

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/autodiff.h"
#include "compiler/training/loss_scaling.h"
#include "compiler/training/training_helpers.h"
#include "compiler/training/weight_sharding.h"
#include "ir/optimizer_hyperparameters.h"
#include "ir/state_names.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

namespace popsim::compiler {
namespace {

using training::addNode;
using training::collectiveAttrs;
using training::inPhase;
using training::placementOf;
using training::ReplicatedState;

// counter = counter + 1, as an update of an i64 state scalar.
void increment(ir::Graph& graph, ir::Value* counter, const ir::Placement& where) {
  ir::Value* next = addNode(graph, ir::OpKind::Affine, {counter}, {{"scale", 1.0}, {"shift", 1.0}},
                            where.phase, where)
                        ->output();
  addNode(graph, ir::OpKind::Assign, {counter, next}, {}, where.phase, where);
}

// Random ops (dropout, random draws) read the counter in the forward pass.
// Each IPU keeps its own copy and advances it after its last random op of a
// micro-batch, in the forward pass: pipelined IPUs run several forward passes
// before the matching backward passes, and each must draw the numbers of its
// own micro-batch.
void advanceRandomCounters(ir::Graph& graph, ir::Value* counter) {
  std::map<int64_t, const ir::Node*> lastReader;
  std::vector<ir::Node*> readers(counter->users().begin(), counter->users().end());
  for (const ir::Node* reader : readers) {
    lastReader[reader->placement().ipu] = reader; // users are in graph order
  }
  ReplicatedState counters(graph, counter);
  for (ir::Node* reader : readers) {
    ir::Value* local = counters.on(reader->placement().ipu);
    for (size_t i = 0; i < reader->inputs().size(); ++i) {
      if (reader->input(i) == counter && local != counter) graph.replaceInput(reader, i, local);
    }
  }
  for (const auto& [ipu, reader] : lastReader) {
    increment(graph, counters.on(ipu), inPhase(reader->placement(), ir::Phase::Forward));
  }
}

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

bool listed(const std::vector<std::string>& names, const ir::Value* param) {
  return std::find(names.begin(), names.end(), param->name()) != names.end();
}

bool isSharded(const TrainingConfig& config, const ir::Value* param) {
  return config.replicas > 1 &&
         (listed(config.shardedParameters, param) || listed(config.shardedWeights, param));
}

// Whether the weight itself is stored as this replica's shard.
bool isStoredSharded(const TrainingConfig& config, const ir::Value* param) {
  return config.replicas > 1 && listed(config.shardedWeights, param);
}

// Each step gradient summed over the replicas, on its parameter's IPU at the
// start of the optimizer step (the GradientNorm phase, after the last
// backward), keyed by the parameter so the replicas' ops pair up.
std::unordered_map<const ir::Value*, ir::Value*>
sumAcrossReplicas(ir::Graph& graph, const TrainingConfig& config,
                  const std::vector<ir::Value*>& params,
                  const std::unordered_map<const ir::Value*, ir::Value*>& grads) {
  POPSIM_CHECK(config.systemIpus >= config.replicas, ErrorKind::InvalidOption, "training with ",
               config.replicas, " replicas needs at least as many IPUs, got ", config.systemIpus,
               ".");
  std::unordered_map<const ir::Value*, ir::Value*> reduced;
  for (ir::Value* param : params) {
    const auto grad = grads.find(param);
    if (grad == grads.end()) continue;
    const ir::Placement where = inPhase(placementOf(param), ir::Phase::GradientNorm);
    const bool sharded = isSharded(config, param);
    ir::Attributes attrs = collectiveAttrs(config, param->name());
    const auto grouped = config.groupedParameters.find(param->name());
    if (grouped != config.groupedParameters.end()) {
      const auto [size, stride] = grouped->second;
      ir::Value* sum = grad->second; // each replica trains its own in a group of one
      if (size > 1) {
        attrs.set("replicas", size);
        attrs.set("group_stride", stride);
        sum = addNode(graph, ir::OpKind::ReplicaAllReduce, {sum}, attrs, where.phase, where)
                  ->output();
      }
      if (config.runningMean) {
        // Running: the mean over the group (the step divides by all replicas).
        ir::Value* factor = graph.addScalarConstant(
            static_cast<float>(config.replicas) / static_cast<float>(size), sum->type().dtype);
        sum = addNode(graph, ir::OpKind::Mul, {sum, factor}, {}, where.phase, where)->output();
      }
      reduced[param] = sum;
      continue;
    }
    reduced[param] =
        addNode(graph, sharded ? ir::OpKind::ReplicaReduceScatter : ir::OpKind::ReplicaAllReduce,
                {grad->second}, attrs, where.phase, where)
            ->output();
  }
  return reduced;
}

// Scales the step's gradients by min(1, maxGradNorm / (norm + 1e-6)), norm the
// 2-norm of all of them together, as torch.nn.utils.clip_grad_norm_. Each IPU
// sums the squares of its own gradients in its gradient-norm task; each IPU's
// update task then adds up every IPU's sum in the same order (the inter-IPU
// copies bring them), so all compute the same factor, as after an all-reduce.
// The norm is the updates' gradients': divided by the gradient scale and by
// `lossScaling`, a constant loss scaling the updates divide out (1 when the
// device divided the gradients by it already).
std::unordered_map<const ir::Value*, ir::Value*> clipByGlobalNorm(
    ir::Graph& graph, const TrainingConfig& config, const std::vector<ir::Value*>& params,
    const std::unordered_map<const ir::Value*, ir::Value*>& grads, double lossScaling) {
  std::map<int64_t, ir::Value*> sums;        // per IPU
  std::map<int64_t, ir::Value*> shardedSums; // per IPU: of this replica's shards only
  std::map<int64_t, ir::Placement> places;
  for (ir::Value* param : params) {
    if (grads.count(param) == 0) continue;
    ir::Value* grad = grads.at(param);
    const ir::Placement where = inPhase(placementOf(param), ir::Phase::GradientNorm);
    auto& sumsOfKind = isSharded(config, param) ? shardedSums : sums;
    ir::Value* squares =
        addNode(graph, ir::OpKind::Mul, {grad, grad}, {}, where.phase, where)->output();
    if (squares->type().rank() > 0) {
      std::vector<int64_t> dims(static_cast<size_t>(squares->type().rank()));
      for (size_t d = 0; d < dims.size(); ++d)
        dims[d] = static_cast<int64_t>(d);
      squares = addNode(graph, ir::OpKind::ReduceSum, {squares},
                        {{"dims", dims}, {"keepdim", false}}, where.phase, where)
                    ->output();
    }
    auto [sum, first] = sumsOfKind.emplace(where.ipu, squares);
    if (!first) {
      sum->second =
          addNode(graph, ir::OpKind::Add, {sum->second, squares}, {}, where.phase, where)->output();
    }
    places.emplace(where.ipu, inPhase(where, ir::Phase::Update));
  }
  // The shards' squares add up over the replicas to the whole gradients'.
  for (const auto& [ipu, partial] : shardedSums) {
    const ir::Placement where = inPhase(places.at(ipu), ir::Phase::GradientNorm);
    ir::Value* total = addNode(graph, ir::OpKind::ReplicaAllReduce, {partial},
                               collectiveAttrs(config, "gradient_norm@ipu" + std::to_string(ipu)),
                               where.phase, where)
                           ->output();
    auto [sum, first] = sums.emplace(ipu, total);
    if (!first) {
      sum->second =
          addNode(graph, ir::OpKind::Add, {sum->second, total}, {}, where.phase, where)->output();
    }
  }
  std::map<int64_t, ir::Value*> factors;
  for (const auto& [ipu, where] : places) {
    ir::Value* total = nullptr;
    for (const auto& [from, sum] : sums) {
      total = total == nullptr
                  ? sum
                  : addNode(graph, ir::OpKind::Add, {total, sum}, {}, where.phase, where)->output();
    }
    ir::Value* norm = addNode(graph, ir::OpKind::Sqrt, {total}, {}, where.phase, where)->output();
    // The norm of the gradients the updates read: scaled, and unscaled.
    ir::Value* shifted = addNode(graph, ir::OpKind::Affine, {norm},
                                 {{"scale", config.gradientScale / lossScaling}, {"shift", 1e-6}},
                                 where.phase, where)
                             ->output();
    ir::Value* factor =
        addNode(graph, ir::OpKind::Div,
                {graph.addScalarConstant(static_cast<float>(config.maxGradNorm)), shifted}, {},
                where.phase, where)
            ->output();
    factors[ipu] =
        addNode(graph, ir::OpKind::BinaryPointwise, {factor, graph.addScalarConstant(1.0f)},
                {{"function", std::string("minimum")}}, where.phase, where)
            ->output();
  }
  std::unordered_map<const ir::Value*, ir::Value*> clipped;
  for (ir::Value* param : params) {
    if (grads.count(param) == 0) continue;
    const ir::Placement where = inPhase(placementOf(param), ir::Phase::Update);
    clipped[param] = addNode(graph, ir::OpKind::Mul, {grads.at(param), factors.at(where.ipu)}, {},
                             where.phase, where)
                         ->output();
  }
  return clipped;
}

// Gradient accumulators and optimizer state are float32 whatever the
// parameter's dtype, as PopTorch's accum_type and momentum types default to.
ir::TensorType float32Like(const ir::TensorType& type) { return {ir::DType::Float32, type.shape}; }

// The update op of one parameter, with the state it needs created on the way:
// it updates `target` in place (the parameter, or this replica's shard of
// it), and its state has the target's shape, in float32.
void addUpdate(ir::Graph& graph, const TrainingConfig& config, const ParameterGroup& group,
               ir::Value* param, ir::Value* target, ir::Value* grad, ir::Value* hyper,
               ir::Value* step) {
  std::vector<ir::Value*> states;
  for (const std::string& key : parameterStateKeys(config.optimizer, group)) {
    states.push_back(graph.addState(ir::parameterStateName(param->name(), key),
                                    float32Like(target->type()), ir::StateKind::Optimizer));
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
             {"decoupled_weight_decay", config.optimizer == OptimizerKind::AdamW}},
            ir::Phase::Update, where);
    return;
  case OptimizerKind::Rmsprop:
    addNode(graph, ir::OpKind::RmspropUpdate, inputs({target, grad, hyper}),
            {{"centered", group.centered},
             {"has_momentum", group.hasMomentum},
             {"maximize", group.maximize}},
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
  ir::Value* shard = graph.addState(ir::parameterStateName(param->name(), "weight_shard"),
                                    gradShard->type(), ir::StateKind::Optimizer);
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

void buildTrainingProgram(ir::Graph& graph, const TrainingConfig& config,
                          int64_t gradientAccumulation) {
  POPSIM_ASSERT(graph.loss() != nullptr, "a training program needs a loss.");
  POPSIM_ASSERT(gradientAccumulation >= 1, "gradientAccumulation ", gradientAccumulation, ".");
  // Step 0: sharded weights become their shards, gathered where read.
  const auto gathered = shardWeights(graph, config);
  // Step 1: gradients of every trained parameter.
  std::vector<ir::Value*> params;
  std::unordered_map<const ir::Value*, size_t> groupOf;
  for (size_t g = 0; g < config.groups.size(); ++g) {
    for (const std::string& name : config.groups[g].parameters) {
      ir::Value* weight = graph.findWeight(name);
      if (weight == nullptr || !weight->trainable() || groupOf.count(weight) != 0) {
        continue; // not used by the model's forward pass, a buffer, or listed twice
      }
      params.push_back(weight);
      groupOf[weight] = g;
    }
  }
  // Sharded weights: the gradient is the gathered weight's.
  std::vector<ir::Value*> wrt;
  for (ir::Value* param : params) {
    const auto whole = gathered.find(param);
    wrt.push_back(whole != gathered.end() ? whole->second : param);
  }
  // The backward pass starts from the loss scaling factor.
  LossScaling lossScaling(graph, config, gradientAccumulation);
  const auto wrtGrads = buildGradients(graph, graph.loss(), wrt, lossScaling.seed());
  std::unordered_map<const ir::Value*, ir::Value*> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto grad = wrtGrads.find(wrt[i]);
    if (grad != wrtGrads.end()) grads[params[i]] = grad->second;
  }
  lossScaling.countGradients();
  for (const std::string& name : config.anchoredGradients) {
    const ir::Value* weight = graph.findWeight(name);
    const auto grad = weight != nullptr ? grads.find(weight) : grads.end();
    POPSIM_CHECK(grad != grads.end(), ErrorKind::InvalidOption, "anchorTensor: 'Gradient___", name,
                 "' names no parameter that the optimizer trains and the loss depends on",
                 weight == nullptr ? " (the program has no weight of that name)" : "",
                 ". Anchor the gradient of a trained parameter, as model.named_parameters() "
                 "names it.");
    graph.addOutput(grad->second);
  }

  // Step 2: accumulation over micro-batches.
  const bool accumulate = gradientAccumulation > 1;
  std::unordered_map<const ir::Value*, ir::Value*> stepGrads;
  for (ir::Value* param : params) {
    auto grad = grads.find(param);
    if (grad == grads.end()) continue;
    if (!accumulate) {
      stepGrads[param] = grad->second;
      continue;
    }
    ir::Value* accumulator =
        graph.addState(ir::parameterStateName(param->name(), "accumulator"),
                       float32Like(grad->second->type()), ir::StateKind::Accumulator);
    std::vector<ir::Value*> inputs = {accumulator, grad->second};
    if (config.runningMean) {
      inputs.push_back(graph.addState(ir::parameterStateName(param->name(), "accumulator_count"),
                                      {ir::DType::Int64, {}}, ir::StateKind::Accumulator));
    }
    addNode(graph, ir::OpKind::Accumulate, inputs, {{"every", gradientAccumulation}},
            ir::Phase::Backward,
            grad->second->producer() != nullptr ? grad->second->producer()->placement()
                                                : inPhase(placementOf(param), ir::Phase::Backward));
    stepGrads[param] = accumulator;
  }

  // Step 3: fresh random numbers (dropout masks) for every micro-batch.
  if (ir::Value* counter = graph.findState(ir::kRandomCounterName)) {
    advanceRandomCounters(graph, counter);
  }

  // With replicas, the step's gradients summed across them: what clipping
  // and the updates read. Accumulators keep this replica's own sums.
  const auto reducedGrads =
      config.replicas > 1 ? sumAcrossReplicas(graph, config, params, stepGrads) : stepGrads;

  // Step 4: gradient clipping; the updates read the clipped gradients.
  const auto unscaledGrads = lossScaling.unscale(params, reducedGrads);
  const auto updateGrads =
      config.maxGradNorm > 0.0
          ? clipByGlobalNorm(graph, config, params, unscaledGrads, lossScaling.clippingDivisor())
          : unscaledGrads;
  lossScaling.addUpdate();

  // Step 5: per group, the step count and the updates. Each IPU holding
  // parameters of the group has its own hyper-parameters and step count.
  for (size_t g = 0; g < config.groups.size(); ++g) {
    const ParameterGroup& group = config.groups[g];
    ReplicatedState hyper(
        graph, ir::groupStateName(g, "hyper"),
        {ir::DType::Float64, {static_cast<int64_t>(hyperCount(config.optimizer))}},
        ir::StateKind::Optimizer);
    ReplicatedState step(graph, ir::groupStateName(g, "step"), {ir::DType::Int64, {}},
                         ir::StateKind::Optimizer);
    for (ir::Value* param : params) {
      if (groupOf.at(param) != g || stepGrads.count(param) == 0) continue;
      const ir::Placement where = inPhase(placementOf(param), ir::Phase::Update);
      ir::Value* stepCount = nullptr;
      if (needsStep(config, group)) {
        bool created = false;
        stepCount = step.on(where.ipu, &created);
        if (created) increment(graph, stepCount, where);
      }
      if (isStoredSharded(config, param)) {
        addUpdate(graph, config, group, param, param, updateGrads.at(param), hyper.on(where.ipu),
                  stepCount);
      } else if (isSharded(config, param)) {
        addShardedUpdate(graph, config, group, param, updateGrads.at(param), hyper.on(where.ipu),
                         stepCount);
      } else {
        addUpdate(graph, config, group, param, param, updateGrads.at(param), hyper.on(where.ipu),
                  stepCount);
      }
      if (accumulate) {
        addNode(graph, ir::OpKind::Fill, {stepGrads.at(param)}, {{"value", 0.0}}, ir::Phase::Update,
                where);
      }
    }
  }
}

void makeGradientProgram(ir::Graph& graph) {
  POPSIM_ASSERT(graph.loss() != nullptr, "a gradient program needs a loss.");
  std::vector<ir::Value*> wrt;
  for (ir::Value* input : graph.inputs()) {
    if (ir::isFloat(input->type().dtype)) wrt.push_back(input);
  }
  for (ir::Value* weight : graph.weights()) {
    if (weight->trainable()) wrt.push_back(weight);
  }
  const auto grads = buildGradients(graph, graph.loss(), wrt);
  std::vector<ir::Value*> outputs;
  for (ir::Value* value : wrt) {
    auto grad = grads.find(value);
    if (grad != grads.end()) {
      outputs.push_back(grad->second);
    } else {
      std::vector<uint8_t> zeros(value->type().storageBytes(), 0);
      outputs.push_back(graph.addConstant(value->type(), std::move(zeros)));
    }
  }
  graph.setOutputs(outputs);
}

std::unique_ptr<Pass> createTrainingProgramPass(TrainingConfig config,
                                                int64_t gradientAccumulation) {
  return std::make_unique<FunctionPass>(
      "training-program", [config = std::move(config), gradientAccumulation](ir::Graph& graph) {
        buildTrainingProgram(graph, config, gradientAccumulation);
      });
}

void makeInferenceProgram(ir::Graph& graph, const TrainingConfig& replication) {
  shardWeights(graph, replication);
  if (ir::Value* counter = graph.findState(ir::kRandomCounterName)) {
    advanceRandomCounters(graph, counter);
  }
}

std::unique_ptr<Pass> createInferenceProgramPass(TrainingConfig replication) {
  return std::make_unique<FunctionPass>("inference-program",
                                        [replication = std::move(replication)](ir::Graph& graph) {
                                          makeInferenceProgram(graph, replication);
                                        });
}

std::unique_ptr<Pass> createGradientProgramPass() {
  return std::make_unique<FunctionPass>("gradient-program", makeGradientProgram);
}

} // namespace popsim::compiler
