#include "host/session_options_json.h"

#include "common/check.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace nlohmann {

// Unset optionals are null.
template <typename T> struct adl_serializer<std::optional<T>> {
  static void to_json(json& out, const std::optional<T>& value) {
    if (value.has_value()) {
      out = *value;
    } else {
      out = nullptr;
    }
  }
  static void from_json(const json& in, std::optional<T>& value) {
    if (in.is_null()) {
      value.reset();
    } else {
      value = in.get<T>();
    }
  }
};

} // namespace nlohmann

namespace popsim::device {
NLOHMANN_JSON_SERIALIZE_ENUM(ChipVersion, {{ChipVersion::Mk1, "Mk1"},
                                           {ChipVersion::Mk2, "Mk2"},
                                           {ChipVersion::Bow, "Bow"}})
} // namespace popsim::device

namespace popsim::compiler {
NLOHMANN_JSON_SERIALIZE_ENUM(ScheduleKind, {{ScheduleKind::Interleaved, "Interleaved"},
                                            {ScheduleKind::Grouped, "Grouped"},
                                            {ScheduleKind::Sequential, "Sequential"}})
} // namespace popsim::compiler

namespace popsim::host {

// The field lists below (and the reader using them) take a field the text
// lacks from a default object; GCC 12 takes that object's empty
// std::optional members for uninitialized reads (a false positive of its
// flow analysis inside nlohmann's templates).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

NLOHMANN_JSON_SERIALIZE_ENUM(OutputMode, {{OutputMode::Final, "Final"},
                                          {OutputMode::EveryN, "EveryN"},
                                          {OutputMode::All, "All"},
                                          {OutputMode::Sum, "Sum"},
                                          {OutputMode::Default, "Default"}})
NLOHMANN_JSON_SERIALIZE_ENUM(ReductionType, {{ReductionType::Sum, "Sum"},
                                             {ReductionType::Mean, "Mean"},
                                             {ReductionType::NoReduction, "NoReduction"}})
NLOHMANN_JSON_SERIALIZE_ENUM(MeanReductionStrategy,
                             {{MeanReductionStrategy::Running, "Running"},
                              {MeanReductionStrategy::Post, "Post"},
                              {MeanReductionStrategy::PostAndLoss, "PostAndLoss"}})
NLOHMANN_JSON_SERIALIZE_ENUM(HalfFloatCasting,
                             {{HalfFloatCasting::FloatDowncastToHalf, "FloatDowncastToHalf"},
                              {HalfFloatCasting::HalfUpcastToFloat, "HalfUpcastToFloat"},
                              {HalfFloatCasting::Default, "Default"}})
NLOHMANN_JSON_SERIALIZE_ENUM(ConnectionType, {{ConnectionType::Always, "Always"},
                                              {ConnectionType::OnDemand, "OnDemand"},
                                              {ConnectionType::Never, "Never"}})
NLOHMANN_JSON_SERIALIZE_ENUM(SyncPattern, {{SyncPattern::Full, "Full"},
                                           {SyncPattern::SinglePipeline, "SinglePipeline"},
                                           {SyncPattern::ReplicaAndLadder, "ReplicaAndLadder"}})
NLOHMANN_JSON_SERIALIZE_ENUM(CommGroupType, {{CommGroupType::All, "All"},
                                             {CommGroupType::Consecutive, "Consecutive"},
                                             {CommGroupType::Orthogonal, "Orthogonal"},
                                             {CommGroupType::Ungrouped, "Ungrouped"}})
NLOHMANN_JSON_SERIALIZE_ENUM(StreamCallbackMode,
                             {{StreamCallbackMode::SingleThread, "singleThread"},
                              {StreamCallbackMode::Collaborative, "collaborative"},
                              {StreamCallbackMode::Dedicated, "dedicated"}})
NLOHMANN_JSON_SERIALIZE_ENUM(StrategyKind, {{StrategyKind::Pipelined, "Pipelined"},
                                            {StrategyKind::Sharded, "Sharded"},
                                            {StrategyKind::SerialPhased, "SerialPhased"},
                                            {StrategyKind::ParallelPhased, "ParallelPhased"}})
NLOHMANN_JSON_SERIALIZE_ENUM(AutoStage, {{AutoStage::SameAsIpu, "SameAsIpu"},
                                         {AutoStage::AutoIncrement, "AutoIncrement"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Liveness,
                             {{Liveness::AlwaysLive, "AlwaysLive"},
                              {Liveness::OffChipAfterFwd, "OffChipAfterFwd"},
                              {Liveness::OffChipAfterFwdNoOverlap, "OffChipAfterFwdNoOverlap"},
                              {Liveness::OffChipAfterEachPhase, "OffChipAfterEachPhase"}})
NLOHMANN_JSON_SERIALIZE_ENUM(ExecutableCache::Source,
                             {{ExecutableCache::Source::Environment, "Environment"},
                              {ExecutableCache::Source::Off, "Off"},
                              {ExecutableCache::Source::Directory, "Directory"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StrategyStage, blocks, ipu)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ExecutionStrategy, kind, schedule, autoStage,
                                                stages, phaseSizes, liveness, separateBackwardPhase)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TensorLocationSettings, onChip,
                                                minElementsForOffChip, replicatedTensorSharding,
                                                minElementsForSharding, ioTilesToLoad,
                                                ioTilesToStore)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrainingOptions, gradientAccumulation, reduction,
                                                meanStrategy, recomputation, automaticLossScaling,
                                                lossScalingBinEdge, lossScalingThreshold,
                                                lossScalingUpdatePeriod)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PrecisionOptions, halfPartials,
                                                runningStatisticsAlwaysFloat, halfFloatCasting,
                                                floatingPointExceptions, stochasticRounding)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SimulatorOptions, numIpus, chip, memoryPerIpu,
                                                threadsPerIpu, costOnly, allowOverCapacity)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TensorLocationOptions, optimizer, weights,
                                                accumulators, activations, numIoTiles)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DistributedOptions, numProcesses, processId)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StreamCallbackThreads, mode, workers, autoWorkers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(InputReplicaGrouping, size, type)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Anchor, shortName, longName, mode, period)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ExecutableCache, source, directory)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(
    SessionOptions, deviceIterations, replicationFactor, inputReplicaGrouping, outputMode,
    outputReturnPeriod, randomSeed, prefetchDepth, availableMemoryProportion, executionStrategy,
    autoRoundNumIpus, syntheticData, moduleNamescope, broadcastBuffers, connectionType, syncPattern,
    updatableNamedBuffers, sourceLocationExcludes, executableCache, profileDirectory, modelName,
    logDirectory, ipuId, anchors, relaxOptimizerAttributesChecks, useIpuModel,
    showCompilationProgressBar, logCycleCount, traceModel, streamCallbacks, training, precision,
    simulator, tensorLocations, distributed)

std::string sessionOptionsToJson(const SessionOptions& options) {
  return nlohmann::json(options).dump();
}

SessionOptions sessionOptionsFromJson(const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<SessionOptions>();
  } catch (const nlohmann::json::exception& error) {
    throwError(ErrorKind::InvalidOption,
               strCat("the text is not popsim session options: ", error.what()));
  }
}

#pragma GCC diagnostic pop

} // namespace popsim::host
