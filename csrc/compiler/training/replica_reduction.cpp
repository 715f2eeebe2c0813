// The step's gradients summed across the replicas that train together
// (TrainingConfig::replicas > 1), on each parameter's IPU at the start of the
// optimizer step (the GradientNorm phase, after the last backward), keyed by
// the parameter so the replicas' ops pair up:
// 1. a replica-grouped parameter sums within its group only (none for a
//    group of one), and with MeanReductionStrategy.Running takes the group's
//    mean;
// 2. a parameter whose optimizer state is sharded is reduce-scattered: each
//    replica gets its shard of the sum;
// 3. any other is all-reduced.
// The map's gradients become the reduced ones; accumulators keep this
// replica's own sums.

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"

namespace popsim::compiler {
namespace {

using training::addNode;
using training::inPhase;
using training::placementOf;

bool sumAcrossReplicas(ir::Graph& graph, PassContext& context) {
  const TrainingConfig& config = context.training();
  if (config.replicas < 2) return false;
  POPSIM_CHECK_OPTION(config.systemIpus >= config.replicas, "replicationFactor", "training with ",
                      config.replicas, " replicas needs at least as many IPUs, got ",
                      config.systemIpus, ".");
  const std::vector<ir::Graph::Gradient> gradients = graph.gradients();
  for (const auto& [param, grad] : gradients) {
    const ir::Placement where = inPhase(placementOf(param), ir::Phase::GradientNorm);
    ir::Attributes attrs = training::collectiveAttrs(config, param->name());
    const auto grouped = config.groupedParameters.find(param->name());
    if (grouped != config.groupedParameters.end()) {
      const auto [size, stride] = grouped->second;
      ir::Value* sum = grad; // each replica trains its own in a group of one
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
      graph.setGradient(param, sum);
      continue;
    }
    const bool sharded = training::isSharded(config, param);
    graph.setGradient(
        param,
        addNode(graph, sharded ? ir::OpKind::ReplicaReduceScatter : ir::OpKind::ReplicaAllReduce,
                {grad}, attrs, where.phase, where)
            ->output());
  }
  return !gradients.empty();
}

} // namespace

std::unique_ptr<Pass> createReplicaReductionPass() {
  return std::make_unique<FunctionPass>("replica-reduction", sumAcrossReplicas);
}

} // namespace popsim::compiler
