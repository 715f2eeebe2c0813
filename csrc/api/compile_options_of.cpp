#include "api/compile_options_of.h"

#include "common/check.h"
#include "device/chip_spec.h"
#include "memory/off_chip_placement.h"

#include <algorithm>

namespace popsim::api {
namespace {

compiler::OutputSpec outputSpecOf(const Options& options, bool training) {
  compiler::OutputSpec spec;
  spec.period = options.outputReturnPeriod();
  switch (options.outputMode()) {
  case OutputMode::Final: spec.mode = compiler::OutputMode::Final; break;
  case OutputMode::EveryN: spec.mode = compiler::OutputMode::EveryN; break;
  case OutputMode::All: spec.mode = compiler::OutputMode::All; break;
  case OutputMode::Sum: spec.mode = compiler::OutputMode::Sum; break;
  case OutputMode::Default:
    spec.mode = training ? compiler::OutputMode::Final : compiler::OutputMode::All;
    break;
  }
  return spec;
}

// Where one kind of tensor lives; `setter` names it in errors.
memory::TensorLocation locationOf(const TensorLocationSettings& settings, const char* setter,
                                  int64_t ioTiles) {
  const char* through = settings.ioTilesToLoad()    ? "Load"
                        : settings.ioTilesToStore() ? "Store"
                                                    : nullptr;
  POPSIM_CHECK(through == nullptr || settings.onChip() || ioTiles > 0, ErrorKind::InvalidOption,
               "TensorLocations.", setter, ": useIOTilesTo", through,
               "(true) streams the tensors through IO tiles, but none are set aside. Use "
               "Options.TensorLocations.numIOTiles(n) (32 to 192), or turn it off.");
  return {settings.onChip(), settings.minElementsForOffChip(), settings.ioTilesToLoad(),
          settings.ioTilesToStore()};
}

compiler::ScheduleKind scheduleOf(const ExecutionStrategy& strategy) {
  if (strategy.kind() == ExecutionStrategy::Kind::Sharded) {
    return compiler::ScheduleKind::Sequential; // one stage at a time
  }
  switch (strategy.schedule()) {
  case PipelineSchedule::Interleaved: return compiler::ScheduleKind::Interleaved;
  case PipelineSchedule::Grouped: return compiler::ScheduleKind::Grouped;
  case PipelineSchedule::Sequential: return compiler::ScheduleKind::Sequential;
  }
  return compiler::ScheduleKind::Interleaved;
}

} // namespace

runtime::CompileOptions compileOptionsOf(const Options& options, bool training,
                                         const compiler::TrainingConfig& config) {
  runtime::CompileOptions compiled;
  int64_t ipusUsed = 1;
  if (options.executionStrategy().has_value()) {
    const ExecutionStrategy& strategy = *options.executionStrategy();
    int64_t stage = 0;
    for (const auto& [path, ipu] : strategy.modules()) {
      compiled.compiler.stages.push_back({path, stage++, ipu});
      ipusUsed = std::max(ipusUsed, ipu + 1);
    }
    compiled.compiler.schedule = scheduleOf(strategy);
  }
  device::IpuSystemConfig& system = compiled.system;
  system.numIpus = options.Simulator.numIpus() > 0 ? options.Simulator.numIpus() : ipusUsed;
  POPSIM_CHECK(system.numIpus >= ipusUsed, ErrorKind::InvalidOption, "Simulator.numIpus is ",
               system.numIpus, " but the execution strategy places a module on IPU ", ipusUsed - 1,
               ". Raise Simulator.numIpus or leave it unset.");
  POPSIM_CHECK(device::parseChipVersion(options.Simulator.ipuVersion(), &system.chip),
               ErrorKind::InvalidOption, "unknown IPU version '", options.Simulator.ipuVersion(),
               "'.");
  system.memoryPerIpu = options.Simulator.memoryPerIpu();
  for (const auto& [ipu, proportion] : options.availableMemoryProportion()) {
    POPSIM_CHECK(ipu < system.numIpus, ErrorKind::InvalidOption,
                 "setAvailableMemoryProportion names IPU", ipu, " but the simulated system has ",
                 system.numIpus, " IPU(s), IPU0 to IPU", system.numIpus - 1,
                 ". Remove the entry or raise Simulator.numIpus.");
  }

  compiler::CompilerOptions& program = compiled.compiler;
  program.program = training ? compiler::ProgramKind::Training : compiler::ProgramKind::Inference;
  program.deviceIterations = options.deviceIterations();
  program.gradientAccumulation = options.Training.gradientAccumulation();
  program.recomputation = options.Training.recomputation();
  program.output = outputSpecOf(options, training);
  program.training = config;
  program.training.systemIpus = system.numIpus; // one replica

  const TensorLocationOptions& locations = options.TensorLocations;
  system.ioTiles = locations.numIOTiles();
  compiled.memory.optimizerState =
      locationOf(locations.optimizerLocation(), "setOptimizerLocation", system.ioTiles);
  compiled.memory.weights =
      locationOf(locations.weightLocation(), "setWeightLocation", system.ioTiles);
  compiled.memory.accumulators =
      locationOf(locations.accumulatorLocation(), "setAccumulatorLocation", system.ioTiles);
  compiled.memory.activations =
      locationOf(locations.activationLocation(), "setActivationLocation", system.ioTiles);

  compiled.memory.prefetchDepth = options.prefetchDepth();
  compiled.memory.halfPartials = options.Precision.partialsType() == c10::ScalarType::Half;
  compiled.memory.availableMemoryProportion = options.availableMemoryProportion();
  compiled.clock.syntheticData = options.syntheticData();

  runtime::KernelOptions& kernels = compiled.kernels;
  kernels.threadsPerIpu = options.Simulator.threadsPerIpu();
  kernels.stochasticRounding = options.Precision.stochasticRounding();
  kernels.stochasticRoundingSeed = options.randomSeed();
  kernels.floatingPointExceptions = options.Precision.floatingPointExceptions();
  kernels.costOnly = options.Simulator.costOnly();
  return compiled;
}

} // namespace popsim::api
