#pragma once

// Replicated tensor sharding (TensorLocationSettings::replicatedTensorSharding):
// which parameters a job's replicas store only a shard of, for both faces
// (Python's trainingModel/inferenceModel and the public C++ sessions).
//
// A sharded weight is split over the replicas, each storing a flattened
// slice, and gathered before use; a sharded parameter's optimizer state is
// split likewise and each replica updates only its slice. The weight location
// shards weights, the optimizer location the optimizer state, and a sharded
// weight always has its state sharded with it.

#include "compiler/training/training_config.h"
#include "host/session_options.h"
#include "ir/shape.h"

#include <map>
#include <string>
#include <vector>

namespace popsim::host {

// A model parameter as sharding sees it: floating-point ones of at least the
// location's minimum elements are sharded.
struct ShardCandidate {
  std::string name;
  bool floatingPoint = true;
  ir::Shape shape;
};

// The candidates `location` shards over `replicas`, in the given order: none
// when it does not shard or there is one replica.
std::vector<std::string> shardedBy(const TensorLocationSettings& location, int64_t replicas,
                                   const std::vector<ShardCandidate>& candidates);

// Writes what the session shards into `config` (shardedWeights and, in
// training, shardedParameters): in training, of the parameters the
// optimizer trains (config.groups, already set) over the job's replicas; in
// inference, of any parameter, over the inference job's replicas (which then
// set config.replicas).
void shardParameters(const SessionOptions& options, bool training,
                     const std::vector<ShardCandidate>& parameters,
                     compiler::TrainingConfig& config);

// The device program's variables that `config` shards, by whole shape
// (DeviceProgram::shardVariables): every sharded weight and the optimizer
// state of every parameter in config.shardedParameters. `parameters` are the
// ones shardParameters was given.
std::map<std::string, ir::Shape> shardedVariables(const compiler::TrainingConfig& config,
                                                  const std::vector<ShardCandidate>& parameters);

} // namespace popsim::host
