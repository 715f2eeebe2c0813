#include "host/tensor_sharding.h"

#include "common/check.h"
#include "host/replication.h"
#include "ir/state_names.h"

#include <algorithm>
#include <set>

namespace popsim::host {
namespace {

// The candidate named `name` (every parameter the program trains or reads is one).
const ShardCandidate& candidateNamed(const std::vector<ShardCandidate>& parameters,
                                     const std::string& name) {
  const auto found =
      std::find_if(parameters.begin(), parameters.end(),
                   [&](const ShardCandidate& parameter) { return parameter.name == name; });
  POPSIM_ASSERT(found != parameters.end(), "the model's parameters given for sharding lack '", name,
                "', which the training config names.");
  return *found;
}

// The candidates the optimizer trains, once each (a group may list a
// parameter twice, as torch.optim accepts), in the order of its groups.
std::vector<ShardCandidate> trainedOf(const compiler::TrainingConfig& config,
                                      const std::vector<ShardCandidate>& parameters) {
  std::vector<ShardCandidate> trained;
  std::set<std::string> seen;
  for (const compiler::ParameterGroup& group : config.groups) {
    for (const std::string& name : group.parameters) {
      if (seen.insert(name).second) trained.push_back(candidateNamed(parameters, name));
    }
  }
  return trained;
}

} // namespace

std::vector<std::string> shardedBy(const TensorLocationSettings& location, int64_t replicas,
                                   const std::vector<ShardCandidate>& candidates) {
  std::vector<std::string> names;
  if (!location.replicatedTensorSharding || replicas == 1) return names;
  for (const ShardCandidate& candidate : candidates) {
    if (candidate.floatingPoint &&
        ir::elementCount(candidate.shape) >= location.minElementsForSharding)
      names.push_back(candidate.name);
  }
  return names;
}

void shardParameters(const SessionOptions& options, bool training,
                     const std::vector<ShardCandidate>& parameters,
                     compiler::TrainingConfig& config) {
  const TensorLocationOptions& locations = options.tensorLocations;
  const int64_t replicas = replicationOf(options, training).job();
  if (!training) {
    config.shardedWeights = shardedBy(locations.weights, replicas, parameters);
    if (!config.shardedWeights.empty()) config.replicas = replicas;
    return;
  }
  const std::vector<ShardCandidate> trained = trainedOf(config, parameters);
  config.shardedWeights = shardedBy(locations.weights, replicas, trained);
  // The optimizer location's picks, then the sharded weights it left out
  // (a sharded weight's state is sharded with it).
  config.shardedParameters = shardedBy(locations.optimizer, replicas, trained);
  const std::set<std::string> picked(config.shardedParameters.begin(),
                                     config.shardedParameters.end());
  for (const std::string& weight : config.shardedWeights) {
    if (picked.count(weight) == 0) config.shardedParameters.push_back(weight);
  }
}

std::map<std::string, ir::Shape> shardedVariables(const compiler::TrainingConfig& config,
                                                  const std::vector<ShardCandidate>& parameters) {
  std::map<std::string, ir::Shape> variables;
  for (const std::string& weight : config.shardedWeights)
    variables.emplace(weight, candidateNamed(parameters, weight).shape);
  const std::set<std::string> sharded(config.shardedParameters.begin(),
                                      config.shardedParameters.end());
  for (const compiler::ParameterGroup& group : config.groups) {
    for (const std::string& parameter : group.parameters) {
      if (sharded.count(parameter) == 0) continue;
      const ir::Shape& shape = candidateNamed(parameters, parameter).shape;
      for (const std::string& key : compiler::parameterStateKeys(config.optimizer, group))
        variables.emplace(ir::parameterStateName(parameter, key), shape);
    }
  }
  return variables;
}

} // namespace popsim::host
