#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace popsim::compiler {

enum class OptimizerKind { Sgd, Adam, AdamW, Rmsprop, Lamb };

// The compile-time shape of one optimizer parameter group: which weights it
// trains and the flags that change which state exists. Numeric
// hyper-parameters (lr, betas, ...) are device state, written by the host.
struct ParameterGroup {
  std::vector<std::string> parameters;
  bool hasMomentum = false; // SGD and RMSprop with momentum != 0
  bool nesterov = false;
  bool amsgrad = false;
  bool centered = false;
  bool maximize = false;
  bool biasCorrection = true; // LAMB and AdamW (PopTorch's bias_correction)
  bool tfVariant = false;     // RMSprop (PopTorch's use_tf_variant)
};

// What the training program's passes build beyond the gradients (the
// micro-batches accumulated per step are CompilerOptions::gradientAccumulation).
struct TrainingConfig {
  OptimizerKind optimizer = OptimizerKind::Sgd;
  std::vector<ParameterGroup> groups;
  // Gradient clipping by the global 2-norm of all the step's gradients, as
  // torch.nn.utils.clip_grad_norm_ (PopTorch's max_grad_norm); 0: none.
  double maxGradNorm = 0.0;
  // What updates multiply the step's gradients by (1 / gradientAccumulation
  // for a mean), which the norm is taken after.
  double gradientScale = 1.0;
  // Accumulators hold the running mean of the micro-batches' gradients
  // (PopTorch's MeanReductionStrategy.Running, which never overflows where
  // the sum would) rather than their sum; gradientScale is then 1.
  bool runningMean = false;
  // PopTorch's accum_type=torch.float16: gradient accumulators in float16
  // (summed and rounded as the IPU does); otherwise float32.
  bool halfAccumulators = false;
  // The optimizer state kept in float16 (PopTorch's velocity_accum_type,
  // first_ and second_order_momentum_accum_type), by key ("momentum_buffer",
  // "exp_avg", ...); the rest is float32.
  std::vector<std::string> halfStates;
  // Parameters whose gradient (each micro-batch's, before accumulation)
  // becomes an output after the model's, in this order: PopTorch's
  // anchorTensor(name, "Gradient___<parameter>").
  std::vector<std::string> anchoredGradients;
  // Replicas of the program that train together (replicationFactor times the
  // processes of a distributed job): each step's gradients are summed across
  // them before clipping and the update (gradientScale then also divides by
  // the replicas for a mean). `systemIpus` counts all the job's IPUs.
  int64_t replicas = 1;
  int64_t systemIpus = 1;
  // Replicated tensor sharding of these parameters' optimizer state: each
  // replica keeps 1/replicas of it (flattened, zero-padded) and updates its
  // shard of the weight from its shard of the summed gradient
  // (reduce-scatter); the updated shards are then gathered into the weight.
  std::vector<std::string> shardedParameters;
  // Replicated tensor sharding of these weights too (each also in
  // shardedParameters): each replica stores only its shard of the weight,
  // updates it in place, and every task that reads the weight gathers it
  // from the replicas' shards first (weight_sharding.h).
  std::vector<std::string> shardedWeights;
  // Replica-grouped parameters (PopTorch's replicaGrouping), by name: (group
  // size, stride). Each step sums their gradient within the replica's group
  // only, neighbours (stride 1) or every stride-th replica; a group of one
  // keeps its own gradient. gradientScale still divides by all the replicas
  // for a mean, as PopART's Post strategy does; with runningMean, the sum is
  // the group's mean (PopART's Running).
  std::map<std::string, std::pair<int64_t, int64_t>> groupedParameters;
  // Loss scaling (the optimizers' loss_scaling): the loss's gradient is this
  // factor rather than 1, so that small float16 gradients stay
  // representable. A constant factor is divided out by the updates (the
  // host divides their grad_scale hyper-parameter by it) and by clipping.
  // With lossScalingState, the factor is the float32 scalar state
  // ir::kLossScalingName (a copy on each IPU that needs it), which the host
  // writes so that setOptimizer can change it without recompiling; each step
  // gradient is then divided by it in float32 before clipping and the update.
  double lossScaling = 1.0;
  bool lossScalingState = false;
  // Automatic loss scaling (PopTorch's Training.setAutomaticLossScaling, as
  // PopART does it; needs lossScalingState): every step, the float16
  // gradients of the backward pass are counted above and below a bin edge
  // (lossScalingBinEdge x 65504); if more than the proportion
  // lossScalingThreshold lie above, the factor halves, otherwise it doubles.
  bool automaticLossScaling = false;
  double lossScalingBinEdge = 0.125;
  double lossScalingThreshold = 1e-7;

  bool scalesLoss() const { return lossScalingState || lossScaling != 1.0; }
};

// The state a training program keeps is named as ir/state_names.h says.

// PyTorch's per-parameter optimizer state of a group (momentum_buffer,
// exp_avg, ...), in the order its update op reads it; each is the state
// ir::parameterStateName(parameter, key).
std::vector<std::string> parameterStateKeys(OptimizerKind optimizer, const ParameterGroup& group);

// PopTorch's optimizer arguments that type the state (the *_accum_type
// arguments but accum_type, which types the gradient accumulators).
enum class StateTypeArgument { Velocity, FirstOrderMomentum, SecondOrderMomentum };

// The state keys `argument` types for `optimizer` (SGD's velocity_accum_type:
// momentum_buffer; Adam's second_order_momentum_accum_type: exp_avg_sq and
// max_exp_avg_sq; ...), whichever of them a group keeps.
std::vector<std::string> stateKeysTypedBy(OptimizerKind optimizer, StateTypeArgument argument);

// What the optimizer state `key` of a parameter of `group` holds before the
// first step, where the optimizer has no state of its own to resume from.
double initialStateValue(const ParameterGroup& group, const std::string& key);

// The hyper-parameter names of an optimizer, in the order of its hyper vector
// (ir/optimizer_hyperparameters.h).
std::vector<std::string> hyperParameterNames(OptimizerKind optimizer);

} // namespace popsim::compiler
