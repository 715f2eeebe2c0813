// The host runtime's reading of session options: stages from strategies,
// replicas and their input groups, the micro-batch split, host threads and
// the one builder of compile options, each error naming the option.

#include "host/batch_split.h"
#include "host/compile_options_builder.h"
#include "host/host_threads.h"
#include "host/replication.h"
#include "host/session_options.h"
#include "host/session_options_json.h"

#include "test_utils.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace popsim {
namespace {

using host::SessionOptions;

// The message of the popsim::CoreError `body` throws, or "" when it throws none.
template <typename Body> std::string messageOf(Body&& body) {
  try {
    body();
  } catch (const CoreError& error) {
    return error.what();
  }
  return "";
}

std::vector<ir::BlockAnnotation> blocks(const std::vector<std::pair<std::string, int64_t>>& ids) {
  std::vector<ir::BlockAnnotation> annotations;
  for (const auto& [name, ipu] : ids)
    annotations.push_back({name, ipu, {}});
  return annotations;
}

std::vector<std::tuple<std::string, int64_t, int64_t>>
triples(const std::vector<compiler::StageAssignment>& stages) {
  std::vector<std::tuple<std::string, int64_t, int64_t>> result;
  for (const compiler::StageAssignment& stage : stages)
    result.emplace_back(stage.block, stage.stage, stage.ipu);
  return result;
}

using Triples = std::vector<std::tuple<std::string, int64_t, int64_t>>;

TEST(ExecutionStrategyTest, SameAsIpuNumbersStagesDenselyInIpuOrder) {
  EXPECT_EQ(triples(host::assignStages(host::defaultStrategy(), blocks({{"A", 0}, {"B", 2}}))),
            (Triples{{"A", 0, 0}, {"B", 1, 2}}));
  EXPECT_EQ(
      messageOf([] {
        host::assignStages(host::defaultStrategy(), blocks({{"A", -1}}));
      }),
      "Block 'A' (entered at <unknown location>) has no ipu_id, which AutoStage.SameAsIpu needs to "
      "choose its stage. Give it one (popsim.Block('A', ipu_id=...)) or list the stages: "
      "popsim.PipelinedExecution(popsim.Stage('A').ipu(0), ...).");
}

TEST(ExecutionStrategyTest, AutoIncrementStartsAStageWhenTheIpuChanges) {
  host::ExecutionStrategy strategy;
  strategy.autoStage = host::AutoStage::AutoIncrement;
  EXPECT_EQ(triples(host::assignStages(strategy, blocks({{"A", 0}, {"B", 0}, {"C", -1}}))),
            (Triples{{"A", 0, 0}, {"B", 0, 0}, {"C", 1, 2}}));
}

TEST(ExecutionStrategyTest, ListedStagesTakeTheirIpuElseTheBlocksElseTheirPosition) {
  host::ExecutionStrategy strategy;
  strategy.kind = host::StrategyKind::Sharded;
  strategy.stages = {{{"A", "B"}, 3}, {{"C"}, std::nullopt}, {{"D"}, std::nullopt}};
  EXPECT_EQ(
      triples(host::assignStages(strategy, blocks({{"A", 0}, {"B", 1}, {"C", 5}, {"D", -1}}))),
      (Triples{{"A", 0, 3}, {"B", 0, 3}, {"C", 1, 5}, {"D", 2, 2}}));
  EXPECT_EQ(messageOf([&] {
              host::assignStages(strategy, blocks({{"A", 0}, {"B", 0}}));
            }),
            "Unknown Block 'C' in stage 1 of popsim.ShardedExecution: the model has no such "
            "block. Its blocks are 'A', 'B'.");
  strategy.stages = {{{"A"}, 0}};
  EXPECT_EQ(
      messageOf([&] {
        host::assignStages(strategy, blocks({{"A", 0}, {"B", 0}}));
      }),
      "Unknown Block 'B' (entered at <unknown location>): popsim.ShardedExecution places no stage "
      "for it. Add it to a popsim.Stage.");
}

TEST(ExecutionStrategyTest, ParallelPhasesAlternateBetweenEvenAndOddIpus) {
  host::ExecutionStrategy strategy;
  strategy.kind = host::StrategyKind::ParallelPhased;
  strategy.stages = {{{"A"}, 0}, {{"B"}, 1}, {{"C"}, 3}};
  strategy.phaseSizes = {1, 1, 1};
  EXPECT_EQ(messageOf([&] { host::checkPhaseIpus(strategy); }),
            "ParallelPhasedExecution: phase 2 runs Stage('C').ipu(3) on IPU 3, but even phases "
            "run on even IPUs (phases alternate between the two groups). Set phase(i).ipus(...) "
            "to match.");
  strategy.stages[2].ipu = 2;
  EXPECT_EQ(messageOf([&] { host::checkPhaseIpus(strategy); }), "");
}

TEST(ReplicationTest, InputGroupsShareTheirData) {
  SessionOptions options;
  options.replicationFactor = 4;
  options.inputReplicaGrouping = {2, host::CommGroupType::Consecutive};
  host::Replication replication = host::replicationOf(options);
  EXPECT_EQ(replication.inputParts, 2);
  EXPECT_EQ(replication.inputPartOf, (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(replication.inputLabel(), "input groups of replicas");
  options.inputReplicaGrouping.type = host::CommGroupType::Orthogonal;
  EXPECT_EQ(host::replicationOf(options).inputPartOf, (std::vector<int64_t>{0, 1, 0, 1}));
  options.inputReplicaGrouping = {3, host::CommGroupType::Consecutive};
  EXPECT_EQ(messageOf([&] { host::replicationOf(options); }),
            "inputReplicaGrouping(3, Consecutive): groups of 3 replicas do not divide "
            "replicationFactor (4). Choose a group size that divides it.");
  options.inputReplicaGrouping = {3, host::CommGroupType::Ungrouped}; // the size is ignored
  EXPECT_EQ(host::replicationOf(options).inputParts, 4);
}

TEST(ReplicationTest, TrainingJobsSpanTheProcesses) {
  SessionOptions options;
  options.replicationFactor = 2;
  options.distributed = {3, 1};
  EXPECT_EQ(host::replicationOf(options).job(), 6);
  EXPECT_EQ(host::replicationOf(options).first, 2);
  EXPECT_EQ(host::replicationOf(options, false).job(), 2); // inference: this process's own
  options.simulator.numIpus = 6;
  EXPECT_EQ(host::ipusPerReplica(options, 2), 3);
  EXPECT_EQ(messageOf([&] { host::ipusPerReplica(options, 4); }),
            "Simulator.numIpus(6) must hold replicationFactor (2) replicas of the model, which "
            "uses 4 IPU(s) each: set it to a multiple of 2 that is at least 8, or leave it "
            "unset.");
}

TEST(HostThreadsTest, ReplicasShareTheStreamCallbackThreads) {
  using Mode = host::StreamCallbackMode;
  host::StreamCallbackThreads none;
  EXPECT_EQ(host::replicasPerHostThread(none, none, 4), 4); // Poplar's default: one thread
  host::StreamCallbackThreads session;
  session.workers = 4;
  EXPECT_EQ(host::replicasPerHostThread(session, none, 4), 4); // singleThread ignores them
  session.mode = Mode::Collaborative;
  session.workers = 1;
  EXPECT_EQ(host::replicasPerHostThread(session, none, 4), 2); // the main thread and 1 worker
  session.mode = Mode::Dedicated;
  session.workers = 3;
  EXPECT_EQ(host::replicasPerHostThread(session, none, 4), 2); // up to 2 on each of 3
  session.workers.reset();
  session.autoWorkers = true;
  EXPECT_EQ(host::replicasPerHostThread(session, none, 4), 1); // a thread per replica
  // The environment wins option by option: its mode with the session's workers.
  host::StreamCallbackThreads environment;
  environment.mode = Mode::Collaborative;
  session = {Mode::Dedicated, 1, false};
  EXPECT_EQ(host::replicasPerHostThread(session, environment, 4), 2);
}

TEST(BatchSplitTest, InputsSplitIntoTheMicroBatchesOfACall) {
  SessionOptions options;
  options.deviceIterations = 2;
  options.training.gradientAccumulation = 3;
  options.replicationFactor = 2;
  const host::BatchSplit split = host::batchSplitOf(options);
  EXPECT_EQ(split.factor(), 12);
  EXPECT_EQ(split.microBatchShape("x", {24, 5}), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(split.batchText(2),
            "micro-batch 2 x deviceIterations 2 x gradientAccumulation 3 x replicationFactor 2");
  EXPECT_EQ(messageOf([&] {
              split.microBatchShape("x", {10, 5});
            }),
            "Invalid batch dimension: input 'x' has 10 samples in dimension 0, which must be a "
            "multiple of deviceIterations (2) x gradientAccumulation (3) x replicationFactor (2) "
            "= 12: each call runs 2 device iteration(s) of 3 micro-batch(es) on each of 2 "
            "replica(s), all of equal size.");
  EXPECT_EQ(messageOf([&] { split.microBatchShape("x", {}); }),
            "Input 'x' is a scalar (0-d tensor), but popsim splits each input along dimension 0 "
            "into deviceIterations (2) x gradientAccumulation (3) x replicationFactor (2) = 12: "
            "each call runs 2 device iteration(s) of 3 micro-batch(es) on each of 2 replica(s), "
            "all of equal size. Give it a batch dimension (e.g. x.expand(12)), or use one device "
            "iteration and no gradient accumulation.");
  EXPECT_EQ(messageOf([&] {
              split.microBatchShape("x", {12, 0});
            }),
            "Zero-sized tensors are unsupported (Got shape [12, 0]): input 'x' has no "
            "elements. popsim, as PopTorch, streams tensors that hold data: give every input at "
            "least one element (a batch of at least one sample per micro-batch), or leave the "
            "empty one out of the model's inputs.");
  EXPECT_EQ(host::batchSplitOf(SessionOptions()).microBatchShape("s", {}),
            std::vector<int64_t>{}); // one micro-batch per call: the scalar as it is
}

host::CompileInputs inputsWithBlocks(const std::vector<std::pair<std::string, int64_t>>& ids) {
  host::CompileInputs inputs;
  inputs.blocks = blocks(ids);
  return inputs;
}

TEST(CompileOptionsBuilderTest, BlocksWithoutAStrategyRunPipelinedAStagePerIpu) {
  SessionOptions options;
  options.deviceIterations = 4;
  const runtime::CompileOptions compiled =
      host::buildCompileOptions(options, inputsWithBlocks({{"A", 0}, {"B", 1}}));
  EXPECT_EQ(compiled.system.numIpus, 2);
  EXPECT_EQ(compiled.compiler.schedule, compiler::ScheduleKind::Interleaved);
  EXPECT_EQ(compiled.compiler.output.mode, compiler::OutputMode::All); // inference's Default
  EXPECT_EQ(compiled.compiler.deviceIterations, 4);
  options.autoRoundNumIpus = true;
  EXPECT_EQ(
      host::buildCompileOptions(options, inputsWithBlocks({{"A", 0}, {"B", 2}})).system.numIpus,
      4); // IPUs come in powers of two
}

// An availableMemoryProportion entry for an IPU the program does not use has
// no effect, as in PopTorch (the run warns).
TEST(CompileOptionsBuilderTest, ProportionsOfUnusedIpusAreLeftOut) {
  SessionOptions options;
  options.availableMemoryProportion = {{0, 0.4}, {2, 0.3}};
  const auto compiled = host::buildCompileOptions(options, {});
  EXPECT_EQ(compiled.memory.availableMemoryProportion, (std::map<int64_t, double>{{0, 0.4}}));
}

TEST(CompileOptionsBuilderTest, OptionsThatDoNotFitAreNamed) {
  SessionOptions options;
  options.simulator.allowOverCapacity = true;
  EXPECT_EQ(messageOf([&] { host::buildCompileOptions(options, {}); }),
            "Simulator.allowOverCapacity() needs Simulator.costOnly(): only a run that computes "
            "nothing may exceed its IPUs' memory. Set costOnly() too, or leave allowOverCapacity "
            "off.");
  options = {};
  options.tensorLocations.weights.onChip = false;
  options.tensorLocations.weights.ioTilesToStore = true;
  EXPECT_EQ(messageOf([&] { host::buildCompileOptions(options, {}); }),
            "TensorLocations.setWeightLocation: useIOTilesToStore(True) streams the tensors "
            "through IO tiles, but none are set aside. Use Options.TensorLocations.numIOTiles(n) "
            "(32 to 192), or turn it off.");
  options = {};
  options.tensorLocations.activations.replicatedTensorSharding = true;
  EXPECT_EQ(messageOf([&] { host::buildCompileOptions(options, {}); }),
            "TensorLocations.setActivationLocation: popsim shards the optimizer state and the "
            "weights across replicas, not the activations. Use useReplicatedTensorSharding(True) "
            "with setOptimizerLocation or setWeightLocation, and "
            "useReplicatedTensorSharding(False) with setActivationLocation.");
}

TEST(CompileOptionsBuilderTest, PhasedLivenessMovesTensorsOffChip) {
  SessionOptions options;
  host::ExecutionStrategy strategy;
  strategy.kind = host::StrategyKind::SerialPhased;
  strategy.stages = {{{"A"}, 0}, {{"B"}, 0}};
  strategy.phaseSizes = {1, 1};
  strategy.liveness = host::Liveness::OffChipAfterEachPhase;
  options.executionStrategy = strategy;
  const runtime::CompileOptions compiled =
      host::buildCompileOptions(options, inputsWithBlocks({{"A", -1}, {"B", -1}}));
  EXPECT_EQ(compiled.compiler.schedule, compiler::ScheduleKind::Sequential);
  EXPECT_FALSE(compiled.memory.activations.onChip);
  EXPECT_FALSE(compiled.memory.weights.onChip);
  EXPECT_TRUE(compiled.memory.optimizerState.onChip);
}

TEST(CompileOptionsBuilderTest, ReplicasShareTheHostsThreadsAndTheirHostThread) {
  SessionOptions options;
  options.replicationFactor = 2;
  host::CompileInputs inputs = inputsWithBlocks({{"A", 0}, {"B", 1}});
  inputs.hostThreads = 8;
  const runtime::CompileOptions compiled = host::buildCompileOptions(options, inputs);
  EXPECT_EQ(compiled.kernels.threadsPerIpu, 2); // 8 threads over 2 replicas x 2 IPUs
  EXPECT_EQ(compiled.system.replicasPerHostThread, 2);
}

TEST(CompileOptionsBuilderTest, TrainingReducesAsTheSessionSays) {
  SessionOptions options;
  options.training.gradientAccumulation = 4;
  options.replicationFactor = 2;
  EXPECT_DOUBLE_EQ(host::gradientScale(options), 1.0 / 8);
  options.training.meanStrategy = host::MeanReductionStrategy::Running;
  EXPECT_TRUE(host::runningMean(options));
  EXPECT_DOUBLE_EQ(host::gradientScale(options), 1.0 / 2); // replicas still sum
  options.training.reduction = host::ReductionType::Sum;
  EXPECT_DOUBLE_EQ(host::gradientScale(options), 1.0);
  compiler::TrainingConfig config;
  options.training.automaticLossScaling = true;
  host::applySessionTraining(options, config);
  EXPECT_EQ(config.replicas, 2);
  EXPECT_TRUE(config.lossScalingState); // the factor is device state
  options.training.lossScalingUpdatePeriod = 4;
  EXPECT_EQ(messageOf([&] { host::applySessionTraining(options, config); }),
            "_Popart automaticLossScalingSettings.updatePeriod=4: popsim updates the automatic "
            "loss scaling after every optimizer step (period 1) only.");
}

TEST(SessionOptionsJsonTest, EveryFieldSurvivesTheRoundTrip) {
  SessionOptions options;
  options.deviceIterations = 3;
  options.randomSeed = 42;
  options.availableMemoryProportion = {{1, 0.25}};
  options.simulator.chip = device::ChipVersion::Bow;
  options.simulator.memoryPerIpu = 1024;
  options.tensorLocations.optimizer.onChip = false;
  options.anchors = {{"g", "Gradient___w", host::OutputMode::All, 1}};
  options.streamCallbacks.mode = host::StreamCallbackMode::Dedicated;
  host::ExecutionStrategy strategy;
  strategy.stages = {{{"A", "B"}, 1}};
  strategy.schedule = compiler::ScheduleKind::Grouped;
  options.executionStrategy = strategy;
  const std::string text = host::sessionOptionsToJson(options);
  EXPECT_EQ(host::sessionOptionsToJson(host::sessionOptionsFromJson(text)), text);
  // Fields the text lacks keep their defaults; text that is no options is named.
  EXPECT_EQ(host::sessionOptionsFromJson("{}").deviceIterations, 1);
  EXPECT_NE(messageOf([] {
              host::sessionOptionsFromJson("[1]");
            }).rfind("the text is not popsim session options", 0),
            std::string::npos);
}

} // namespace
} // namespace popsim
