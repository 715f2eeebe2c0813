#pragma once

#include "compiler/pipeline_tasks.h"
#include "compiler/training/training_config.h"
#include "ir/graph.h"

#include <unordered_map>

namespace popsim::compiler {

// Replicated tensor sharding of weights (TrainingConfig::shardedWeights):
// each replica stores only its shard of such a weight, ceil(numel /
// replicas) elements of the flattened, zero-padded tensor, and the ops that
// read the weight read the whole of it gathered from every replica's shard
// just before.

// Gives each sharded weight the type of its shard and makes its readers read
// a replica_all_gather of it, placed where its first reader is. Returns the
// gathered value of each new (sharded) weight: what gradients are taken of.
std::unordered_map<const ir::Value*, ir::Value*> shardWeights(ir::Graph& graph,
                                                              const TrainingConfig& config);

// The whole weight its readers read: the gather of a sharded weight's shard
// (null for a weight stored whole).
ir::Value* gatheredWeight(const ir::Value& weight);

// After the program is ordered by task (and recomputed): a task that reads a
// weight gathered in another task (a backward task, a later stage on the
// same IPU) gathers it again itself, so no whole weight outlives its task or
// is stashed between a micro-batch's forward and backward passes. Returns
// whether it added any gather.
bool gatherShardedWeightsPerTask(ir::Graph& graph, const TaskLayout& layout);

} // namespace popsim::compiler
