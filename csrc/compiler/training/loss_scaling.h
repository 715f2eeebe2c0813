#pragma once

#include "compiler/training/training_helpers.h"
#include "compiler/training/training_program.h"
#include "ir/graph.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace popsim::compiler {

// The loss scaling of a training program (TrainingConfig::lossScaling and
// what follows it), built in the program's order: the seed of the backward
// pass, the counts automatic loss scaling takes of its float16 gradients,
// the division of the step's gradients, and the factor's update.
class LossScaling {
public:
  using Grads = std::unordered_map<const ir::Value*, ir::Value*>;

  LossScaling(ir::Graph& graph, const TrainingConfig& config, int64_t gradientAccumulation);

  // The gradient of the loss: the factor in the loss's dtype, or nullptr for 1.
  ir::Value* seed();
  // Automatic loss scaling, after autodiff: each float16 value the backward
  // pass computes is counted above the bin edge, per IPU, summed over the
  // step's micro-batches in a state. Throws when there is none.
  void countGradients();
  // The step's gradients (after accumulation and the sum across replicas)
  // divided by the factor in float32 when it is a state; as they are when it
  // is a constant, which the updates divide out.
  Grads unscale(const std::vector<ir::Value*>& params, const Grads& grads);
  // What the gradient norm of clipping is divided by besides the updates'
  // gradient scale: a constant factor (1 when unscale divided the gradients).
  double clippingDivisor() const;
  // Automatic loss scaling: halves or doubles every IPU's copy of the factor
  // from the step's counts (Update phase), and resets the counts.
  void addUpdate();

private:
  ir::Graph& graph_;
  const TrainingConfig& config_;
  int64_t gradientAccumulation_;
  std::optional<training::ReplicatedState> factor_;
  // Automatic: per IPU, the count above the edge, and the elements counted.
  std::map<int64_t, ir::Value*> upperCounts_;
  std::map<int64_t, ir::Placement> countPlaces_;
  double countedPerMicroBatch_ = 0.0;
};

} // namespace popsim::compiler
