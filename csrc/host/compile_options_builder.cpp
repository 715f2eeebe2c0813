#include "host/compile_options_builder.h"

#include "common/check.h"
#include "common/logging.h"
#include "host/host_threads.h"
#include "host/replication.h"

#include <algorithm>

namespace popsim::host {
namespace {

compiler::OutputMode compilerOutputMode(OutputMode mode) {
  switch (mode) {
  case OutputMode::Final: return compiler::OutputMode::Final;
  case OutputMode::EveryN: return compiler::OutputMode::EveryN;
  case OutputMode::All: return compiler::OutputMode::All;
  case OutputMode::Sum: return compiler::OutputMode::Sum;
  case OutputMode::Default: break;
  }
  POPSIM_ASSERT(false, "the output mode is resolved before it is compiled");
  return compiler::OutputMode::All;
}

// The smallest power of two of at least `count` (IPUs come in powers of two).
int64_t roundedUpToPowerOfTwo(int64_t count) {
  int64_t rounded = 1;
  while (rounded < count)
    rounded *= 2;
  return rounded;
}

// Where one kind of tensor lives, for the memory plan; `kind` names it in
// errors ("Optimizer": setOptimizerLocation).
memory::TensorLocation locationOf(const TensorLocationSettings& settings, const std::string& kind,
                                  int64_t ioTiles) {
  const char* through = settings.ioTilesToLoad    ? "Load"
                        : settings.ioTilesToStore ? "Store"
                                                  : nullptr;
  POPSIM_CHECK_OPTION(through == nullptr || settings.onChip || ioTiles > 0,
                      "TensorLocations.set" + kind + "Location", "TensorLocations.set", kind,
                      "Location: useIOTilesTo", through,
                      "(True) streams the tensors through IO tiles, but none are set aside. Use "
                      "Options.TensorLocations.numIOTiles(n) (32 to 192), or turn it off.");
  return {settings.onChip, settings.minElementsForOffChip, settings.ioTilesToLoad,
          settings.ioTilesToStore};
}

// Replicas shard the optimizer state and the weights, nothing else.
void refuseSharding(const TensorLocationSettings& settings, const std::string& kind) {
  const std::string setter = "set" + kind + "Location";
  std::string lower = kind;
  lower[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(lower[0])));
  POPSIM_CHECK_OPTION(!settings.replicatedTensorSharding, "TensorLocations." + setter,
                      "TensorLocations.", setter,
                      ": popsim shards the optimizer state and the weights across replicas, not "
                      "the ",
                      lower,
                      "s. Use useReplicatedTensorSharding(True) with setOptimizerLocation or "
                      "setWeightLocation, and useReplicatedTensorSharding(False) with ",
                      setter, ".");
}

void fillTensorLocations(const TensorLocationOptions& locations,
                         runtime::CompileOptions& compiled) {
  refuseSharding(locations.accumulators, "Accumulator");
  refuseSharding(locations.activations, "Activation");
  const int64_t ioTiles = locations.numIoTiles;
  compiled.memory.optimizerState = locationOf(locations.optimizer, "Optimizer", ioTiles);
  compiled.memory.weights = locationOf(locations.weights, "Weight", ioTiles);
  compiled.memory.accumulators = locationOf(locations.accumulators, "Accumulator", ioTiles);
  compiled.memory.activations = locationOf(locations.activations, "Activation", ioTiles);
  compiled.system.ioTiles = ioTiles;
}

// The strategy's part: its schedule and, for phased executions, where
// tensors stay between phases. What waits in Streaming Memory is loaded and
// stored through the IO tiles when the model sets some aside, so the
// transfers overlap the compute (PopART's phased execution overlaps them so);
// OffChipAfterFwdNoOverlap, or a model without IO tiles, moves them through
// the compute tiles, which wait for them.
void fillStrategy(const ExecutionStrategy& strategy, runtime::CompileOptions& compiled) {
  checkPhaseIpus(strategy);
  compiled.compiler.schedule = strategy.scheduleKind();
  if (strategy.liveness == Liveness::AlwaysLive) return;
  const bool overlap =
      strategy.liveness != Liveness::OffChipAfterFwdNoOverlap && compiled.system.ioTiles > 0;
  const memory::TensorLocation offChip{false, 0, overlap, overlap};
  compiled.memory.activations = offChip;
  if (strategy.liveness == Liveness::OffChipAfterEachPhase) {
    compiled.memory.weights = offChip;
  }
}

} // namespace

runtime::CompileOptions buildCompileOptions(const SessionOptions& options,
                                            const CompileInputs& inputs) {
  std::optional<ExecutionStrategy> strategy = options.executionStrategy;
  if (!strategy.has_value() && !inputs.blocks.empty()) {
    strategy = defaultStrategy();
  }
  runtime::CompileOptions compiled;
  compiler::CompilerOptions& program = compiled.compiler;
  if (strategy.has_value()) {
    program.stages = assignStages(*strategy, inputs.blocks);
  }
  int64_t ipusUsed = 1;
  for (const compiler::StageAssignment& stage : program.stages)
    ipusUsed = std::max(ipusUsed, stage.ipu + 1);
  if (options.autoRoundNumIpus) {
    ipusUsed = roundedUpToPowerOfTwo(ipusUsed);
  }
  device::IpuSystemConfig& system = compiled.system;
  system.numIpus = ipusPerReplica(options, ipusUsed);
  // An entry for an IPU the program does not use has no effect, as in PopTorch
  // (a configuration written for more IPUs than this run uses), with a warning.
  std::map<int64_t, double> proportions;
  for (const auto& [ipu, proportion] : options.availableMemoryProportion) {
    if (ipu < system.numIpus) {
      proportions[ipu] = proportion;
    } else {
      POPSIM_LOG(Warn) << "setAvailableMemoryProportion names IPU" << ipu
                       << ", which this program does not use (it runs on " << system.numIpus
                       << " IPU(s) per replica, IPU0 to IPU" << system.numIpus - 1
                       << "): the entry has no effect.";
    }
  }
  system.chip = options.simulator.chip;
  system.memoryPerIpu = options.simulator.memoryPerIpu.value_or(0);
  const int64_t replicas = replicationOf(options, inputs.training).local;
  system.replicasPerHostThread =
      replicasPerHostThread(options.streamCallbacks, inputs.environmentStreamCallbacks, replicas);

  program.program =
      inputs.training ? compiler::ProgramKind::Training : compiler::ProgramKind::Inference;
  program.deviceIterations = options.deviceIterations;
  program.gradientAccumulation = options.training.gradientAccumulation;
  program.recomputation = options.training.recomputation;
  program.output.mode = compilerOutputMode(options.resolvedOutputMode(inputs.training));
  program.output.period = options.outputReturnPeriod;
  // As PopART's EveryN: every N-th step (device iteration) comes back, with
  // all of its gradient accumulation micro-batches.
  POPSIM_CHECK_OPTION(
      program.output.mode != compiler::OutputMode::EveryN ||
          options.deviceIterations % options.outputReturnPeriod == 0,
      "outputMode", "OutputMode.EveryN with output_return_period ", options.outputReturnPeriod,
      " needs deviceIterations to be a multiple of it, got ", options.deviceIterations,
      inputs.training && options.training.gradientAccumulation > 1
          ? " (each returned device iteration comes with all of its "
            "gradientAccumulation micro-batches)."
          : ".");
  program.training = inputs.config;
  // Collectives are costed on all the job's IPUs (every replica's, in every process).
  program.training.systemIpus = system.numIpus * program.training.replicas;

  memory::MemoryOptions& memory = compiled.memory;
  memory.prefetchDepth = options.prefetchDepth;
  memory.halfPartials = options.precision.halfPartials;
  memory.availableMemoryProportion = proportions;
  compiled.clock.syntheticData = options.syntheticData;
  compiled.clock.hostExchangesStallEveryIpu = options.syncPattern != SyncPattern::SinglePipeline;

  runtime::KernelOptions& kernels = compiled.kernels;
  kernels.threadsPerIpu = options.simulator.threadsPerIpu.value_or(0);
  if (replicas > 1 && kernels.threadsPerIpu == 0) { // the host's threads shared by all IPUs
    kernels.threadsPerIpu = std::max<int64_t>(1, inputs.hostThreads / (replicas * ipusUsed));
  }
  kernels.stochasticRounding = options.precision.stochasticRounding;
  kernels.floatingPointExceptions = options.precision.floatingPointExceptions;
  kernels.costOnly = options.simulator.costOnly;
  POPSIM_CHECK_OPTION(!options.simulator.allowOverCapacity || options.simulator.costOnly,
                      "Simulator.allowOverCapacity",
                      "Simulator.allowOverCapacity() needs Simulator.costOnly(): only a run that "
                      "computes nothing may exceed its IPUs' memory. Set costOnly() too, or leave "
                      "allowOverCapacity off.");
  compiled.allowOverCapacity = options.simulator.allowOverCapacity;
  kernels.stochasticRoundingSeed = inputs.randomSeed;
  fillTensorLocations(options.tensorLocations, compiled);
  if (strategy.has_value()) {
    fillStrategy(*strategy, compiled);
  }
  return compiled;
}

bool runningMean(const SessionOptions& options) {
  const TrainingOptions& training = options.training;
  return training.gradientAccumulation > 1 && training.reduction == ReductionType::Mean &&
         training.meanStrategy == MeanReductionStrategy::Running;
}

double gradientScale(const SessionOptions& options) {
  if (options.training.reduction != ReductionType::Mean) {
    return 1.0;
  }
  const auto replicas = static_cast<double>(replicationOf(options).job());
  if (runningMean(options)) { // accumulators hold means; replicas still sum
    return 1.0 / replicas;
  }
  return 1.0 / (static_cast<double>(options.training.gradientAccumulation) * replicas);
}

void applySessionTraining(const SessionOptions& options, compiler::TrainingConfig& config) {
  POPSIM_CHECK_OPTION(
      options.training.lossScalingUpdatePeriod == 1,
      "_Popart.automaticLossScalingSettings.updatePeriod",
      "_Popart automaticLossScalingSettings.updatePeriod=",
      options.training.lossScalingUpdatePeriod,
      ": popsim updates the automatic loss scaling after every optimizer step (period "
      "1) only.");
  config.gradientScale = gradientScale(options);
  config.runningMean = runningMean(options);
  config.replicas = replicationOf(options).job();
  config.automaticLossScaling = options.training.automaticLossScaling;
  // Automatic loss scaling makes the factor device state, as PopTorch makes it variable.
  config.lossScalingState = config.lossScalingState || config.automaticLossScaling;
  config.lossScalingBinEdge = options.training.lossScalingBinEdge;
  config.lossScalingThreshold = options.training.lossScalingThreshold;
}

} // namespace popsim::host
