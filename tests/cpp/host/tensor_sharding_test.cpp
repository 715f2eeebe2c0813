// Replicated tensor sharding's choice of parameters, made once for Python's
// models and the C++ sessions: the floating-point parameters of at least the
// location's minimum, over more than one replica; a sharded weight's
// optimizer state is sharded with it.

#include "host/tensor_sharding.h"

#include "ir/state_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace popsim {
namespace {

using host::ShardCandidate;
using Names = std::vector<std::string>;

const std::vector<ShardCandidate> kParameters = {
    {"embedding.weight", true, {100, 8}},
    {"linear.weight", true, {8, 8}},
    {"linear.bias", true, {8}},
    {"steps", false, {1000}},
};

host::TensorLocationSettings sharding(int64_t minElements) {
  host::TensorLocationSettings location;
  location.replicatedTensorSharding = true;
  location.minElementsForSharding = minElements;
  return location;
}

TEST(TensorSharding, ShardsFloatingPointParametersOfAtLeastTheMinimumOverReplicas) {
  EXPECT_EQ(host::shardedBy(sharding(64), 4, kParameters),
            (Names{"embedding.weight", "linear.weight"}));
  EXPECT_EQ(host::shardedBy(sharding(0), 4, kParameters),
            (Names{"embedding.weight", "linear.weight", "linear.bias"}));
  EXPECT_TRUE(host::shardedBy(sharding(0), 1, kParameters).empty()); // one replica
  EXPECT_TRUE(host::shardedBy(host::TensorLocationSettings{}, 4, kParameters).empty());
}

TEST(TensorSharding, TrainingShardsTrainedParametersAndEachShardedWeightsState) {
  host::SessionOptions options;
  options.replicationFactor = 2;
  options.tensorLocations.optimizer = sharding(100);
  options.tensorLocations.weights = sharding(64);
  compiler::TrainingConfig config;
  config.optimizer = compiler::OptimizerKind::Adam;
  compiler::ParameterGroup group;
  group.parameters = {"linear.weight", "linear.bias", "embedding.weight"};
  config.groups = {group};
  host::shardParameters(options, true, kParameters, config);
  EXPECT_EQ(config.shardedWeights, (Names{"linear.weight", "embedding.weight"}));
  // The optimizer location's picks first, then the sharded weights' others.
  EXPECT_EQ(config.shardedParameters, (Names{"embedding.weight", "linear.weight"}));
  const auto variables = host::shardedVariables(config, kParameters);
  EXPECT_EQ(variables.at("linear.weight"), (ir::Shape{8, 8}));
  for (const std::string& key : compiler::parameterStateKeys(config.optimizer, group)) {
    EXPECT_EQ(variables.at(ir::parameterStateName("embedding.weight", key)), (ir::Shape{100, 8}));
    EXPECT_EQ(variables.count(ir::parameterStateName("linear.bias", key)), 0u);
  }
  EXPECT_EQ(variables.size(), 2 + 2 * compiler::parameterStateKeys(config.optimizer, group).size());
}

TEST(TensorSharding, InferenceShardsAnyParameterAndSetsTheReplicas) {
  host::SessionOptions options;
  options.replicationFactor = 4;
  options.tensorLocations.weights = sharding(0);
  compiler::TrainingConfig config;
  host::shardParameters(options, false, kParameters, config);
  EXPECT_EQ(config.shardedWeights, (Names{"embedding.weight", "linear.weight", "linear.bias"}));
  EXPECT_EQ(config.replicas, 4);
  EXPECT_TRUE(config.shardedParameters.empty());
  compiler::TrainingConfig unsharded;
  host::shardParameters(host::SessionOptions{}, false, kParameters, unsharded);
  EXPECT_TRUE(unsharded.shardedWeights.empty());
  EXPECT_EQ(unsharded.replicas, compiler::TrainingConfig{}.replicas);
}

TEST(TensorSharding, AParameterListedTwiceIsShardedOnce) {
  host::SessionOptions options;
  options.replicationFactor = 2;
  options.tensorLocations.weights = sharding(0);
  compiler::TrainingConfig config;
  compiler::ParameterGroup group;
  group.parameters = {"linear.weight", "linear.weight"};
  config.groups = {group};
  host::shardParameters(options, true, kParameters, config);
  EXPECT_EQ(config.shardedWeights, (Names{"linear.weight"}));
  EXPECT_EQ(config.shardedParameters, (Names{"linear.weight"}));
}

TEST(TensorSharding, TrainingShardsOverEveryProcessesReplicasInferenceOverItsOwn) {
  host::SessionOptions options;
  options.distributed.numProcesses = 2; // one replica each
  options.tensorLocations.weights = sharding(0);
  compiler::TrainingConfig training;
  compiler::ParameterGroup group;
  group.parameters = {"linear.weight"};
  training.groups = {group};
  host::shardParameters(options, true, kParameters, training);
  EXPECT_EQ(training.shardedWeights, (Names{"linear.weight"}));
  compiler::TrainingConfig inference;
  host::shardParameters(options, false, kParameters, inference);
  EXPECT_TRUE(inference.shardedWeights.empty()); // each process infers on its own
}

TEST(TensorSharding, TrainingShardsOnlyTrainedParametersInferenceAny) {
  host::SessionOptions options;
  options.replicationFactor = 2;
  options.tensorLocations.weights = sharding(0);
  compiler::TrainingConfig training; // embedding.weight frozen: in no group
  compiler::ParameterGroup group;
  group.parameters = {"linear.weight"};
  training.groups = {group};
  host::shardParameters(options, true, kParameters, training);
  EXPECT_EQ(training.shardedWeights, (Names{"linear.weight"}));
  compiler::TrainingConfig inference;
  host::shardParameters(options, false, kParameters, inference);
  EXPECT_EQ(inference.shardedWeights, (Names{"embedding.weight", "linear.weight", "linear.bias"}));
}

} // namespace
} // namespace popsim
