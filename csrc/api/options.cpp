// popsim::Options (include/popsim/options.h): each setter checks its value as
// Python's popsim.Options does, with the same messages, and writes it into
// the host runtime's session options, which the sessions compile with.
#include "popsim/options.h"

#include "api/error_classes.h"
#include "api/session_profile.h"
#include "common/strings.h"
#include "device/chip_spec.h"
#include "device/memory_size.h"
#include "host/executable_cache.h"
#include "host/session_options.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace popsim {
namespace {

using api::refuseOption;

// `option` defaults to `setter`, which the message names.
int64_t positive(const char* setter, int64_t value, const char* option = nullptr) {
  if (value < 1) {
    refuseOption(option != nullptr ? option : setter, std::string(setter) +
                                                          " expects a positive integer, got " +
                                                          std::to_string(value) + ".");
  }
  return value;
}

host::TensorLocationSettings hostSettings(const TensorLocationSettings& settings) {
  host::TensorLocationSettings location;
  location.onChip = settings.onChip();
  location.minElementsForOffChip = settings.minElementsForOffChip();
  location.ioTilesToLoad = settings.ioTilesToLoad();
  location.ioTilesToStore = settings.ioTilesToStore();
  location.replicatedTensorSharding = settings.replicatedTensorSharding();
  location.minElementsForSharding = settings.minElementsForReplicatedTensorSharding();
  return location;
}

TensorLocationSettings publicSettings(const host::TensorLocationSettings& location) {
  TensorLocationSettings settings;
  settings.useOnChipStorage(location.onChip)
      .minElementsForOffChip(location.minElementsForOffChip)
      .useIOTilesToLoad(location.ioTilesToLoad)
      .useIOTilesToStore(location.ioTilesToStore)
      .useReplicatedTensorSharding(location.replicatedTensorSharding)
      .minElementsForReplicatedTensorSharding(location.minElementsForSharding);
  return settings;
}

// The host's strategy: a stage per listed module, each a block of its own
// named by its module path (frontend::ImportOptions::moduleBlocks makes them),
// on the IPU given.
host::ExecutionStrategy hostStrategy(const ExecutionStrategy& strategy) {
  host::ExecutionStrategy spec;
  if (strategy.kind() == ExecutionStrategy::Kind::Sharded) {
    spec.kind = host::StrategyKind::Sharded;
  } else {
    switch (strategy.schedule()) {
    case PipelineSchedule::Interleaved: spec.schedule = compiler::ScheduleKind::Interleaved; break;
    case PipelineSchedule::Grouped: spec.schedule = compiler::ScheduleKind::Grouped; break;
    case PipelineSchedule::Sequential: spec.schedule = compiler::ScheduleKind::Sequential; break;
    }
  }
  for (const auto& [path, ipu] : strategy.modules())
    spec.stages.push_back({{path}, ipu});
  return spec;
}

} // namespace

Options::Options()
    : session_(std::make_unique<host::SessionOptions>()), Training(session_.get()),
      Precision(session_.get()), TensorLocations(session_.get()), Simulator(session_.get()) {}

Options::Options(const Options& other)
    : session_(std::make_unique<host::SessionOptions>(*other.session_)), Training(session_.get()),
      Precision(session_.get()), TensorLocations(session_.get()), Simulator(session_.get()),
      strategy_(other.strategy_) {}

Options& Options::operator=(const Options& other) {
  *session_ = *other.session_; // the groups keep pointing at this session
  strategy_ = other.strategy_;
  return *this;
}

Options::~Options() = default;

ExecutionStrategy::ExecutionStrategy(Kind kind,
                                     std::vector<std::pair<std::string, int64_t>> modules,
                                     PipelineSchedule schedule)
    : kind_(kind), modules_(std::move(modules)), schedule_(schedule) {
  const char* name = kind == Kind::Pipelined ? "PipelinedExecution" : "ShardedExecution";
  for (const auto& [module, ipu] : modules_) {
    if (module.empty()) {
      refuseOption(
          "setExecutionStrategy",
          std::string("popsim::") + name +
              " expects module paths as named_modules() names them (\"layer1\"), got an empty "
              "one.");
    }
    if (ipu < 0) {
      refuseOption("setExecutionStrategy", std::string("popsim::") + name + " places module '" +
                                               module + "' on IPU " + std::to_string(ipu) +
                                               "; IPUs are numbered from 0.");
    }
  }
}

PipelinedExecution::PipelinedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus,
                                       PipelineSchedule schedule)
    : ExecutionStrategy(Kind::Pipelined, std::move(modulesToIpus), schedule) {}

ShardedExecution::ShardedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus)
    : ExecutionStrategy(Kind::Sharded, std::move(modulesToIpus), PipelineSchedule::Sequential) {}

TrainingOptions& TrainingOptions::gradientAccumulation(int64_t microBatches) {
  session_->training.gradientAccumulation = positive("Training.gradientAccumulation", microBatches);
  return *this;
}
int64_t TrainingOptions::gradientAccumulation() const {
  return session_->training.gradientAccumulation;
}

TrainingOptions& TrainingOptions::recomputation(bool enabled) {
  session_->training.recomputation = enabled;
  return *this;
}
bool TrainingOptions::recomputation() const { return session_->training.recomputation; }

TrainingOptions& TrainingOptions::accumulationAndReplicationReductionType(ReductionType type) {
  session_->training.reduction =
      type == ReductionType::Sum ? host::ReductionType::Sum : host::ReductionType::Mean;
  return *this;
}
ReductionType TrainingOptions::accumulationAndReplicationReductionType() const {
  return session_->training.reduction == host::ReductionType::Sum ? ReductionType::Sum
                                                                  : ReductionType::Mean;
}

TrainingOptions& TrainingOptions::setMeanAccumulationAndReplicationReductionStrategy(
    MeanReductionStrategy strategy) {
  session_->training.meanStrategy = strategy == MeanReductionStrategy::Running
                                        ? host::MeanReductionStrategy::Running
                                        : host::MeanReductionStrategy::Post;
  return *this;
}
TrainingOptions& TrainingOptions::setAutomaticLossScaling(bool enabled) {
  session_->training.automaticLossScaling = enabled;
  return *this;
}
bool TrainingOptions::automaticLossScaling() const {
  return session_->training.automaticLossScaling;
}

MeanReductionStrategy TrainingOptions::meanReductionStrategy() const {
  return session_->training.meanStrategy == host::MeanReductionStrategy::Running
             ? MeanReductionStrategy::Running
             : MeanReductionStrategy::Post;
}

PrecisionOptions& PrecisionOptions::halfFloatCasting(HalfFloatCastingBehavior behaviour) {
  switch (behaviour) {
  case HalfFloatCastingBehavior::Default:
    session_->precision.halfFloatCasting = host::HalfFloatCasting::Default;
    break;
  case HalfFloatCastingBehavior::FloatDowncastToHalf:
    session_->precision.halfFloatCasting = host::HalfFloatCasting::FloatDowncastToHalf;
    break;
  case HalfFloatCastingBehavior::HalfUpcastToFloat:
    session_->precision.halfFloatCasting = host::HalfFloatCasting::HalfUpcastToFloat;
    break;
  }
  return *this;
}
HalfFloatCastingBehavior PrecisionOptions::halfFloatCasting() const {
  switch (session_->precision.halfFloatCasting) {
  case host::HalfFloatCasting::FloatDowncastToHalf:
    return HalfFloatCastingBehavior::FloatDowncastToHalf;
  case host::HalfFloatCasting::HalfUpcastToFloat:
    return HalfFloatCastingBehavior::HalfUpcastToFloat;
  case host::HalfFloatCasting::Default: break;
  }
  return HalfFloatCastingBehavior::Default;
}

PrecisionOptions& PrecisionOptions::setPartialsType(c10::ScalarType type) {
  if (type != c10::ScalarType::Float && type != c10::ScalarType::Half) {
    refuseOption("Precision.setPartialsType",
                 std::string("Precision.setPartialsType expects at::kFloat or at::kHalf, got ") +
                     c10::toString(type) + ".");
  }
  session_->precision.halfPartials = type == c10::ScalarType::Half;
  return *this;
}
c10::ScalarType PrecisionOptions::partialsType() const {
  return session_->precision.halfPartials ? c10::ScalarType::Half : c10::ScalarType::Float;
}

PrecisionOptions& PrecisionOptions::enableStochasticRounding(bool enabled) {
  session_->precision.stochasticRounding = enabled;
  return *this;
}
bool PrecisionOptions::stochasticRounding() const { return session_->precision.stochasticRounding; }

PrecisionOptions& PrecisionOptions::enableFloatingPointExceptions(bool enabled) {
  session_->precision.floatingPointExceptions = enabled;
  return *this;
}
bool PrecisionOptions::floatingPointExceptions() const {
  return session_->precision.floatingPointExceptions;
}

TensorLocationSettings& TensorLocationSettings::useOnChipStorage(bool use) {
  onChip_ = use;
  return *this;
}

TensorLocationSettings& TensorLocationSettings::minElementsForOffChip(int64_t elements) {
  if (elements < 0) {
    refuseOption(
        "TensorLocationSettings.minElementsForOffChip",
        "TensorLocationSettings.minElementsForOffChip expects a non-negative integer, got " +
            std::to_string(elements) + ".");
  }
  minElementsForOffChip_ = elements;
  return *this;
}

TensorLocationSettings& TensorLocationSettings::useIOTilesToLoad(bool use) {
  ioTilesToLoad_ = use;
  return *this;
}

TensorLocationSettings& TensorLocationSettings::useIOTilesToStore(bool use) {
  ioTilesToStore_ = use;
  return *this;
}

TensorLocationSettings& TensorLocationSettings::useReplicatedTensorSharding(bool use) {
  replicatedTensorSharding_ = use;
  return *this;
}

TensorLocationSettings&
TensorLocationSettings::minElementsForReplicatedTensorSharding(int64_t elements) {
  if (elements < 0) {
    refuseOption("TensorLocationSettings.minElementsForReplicatedTensorSharding",
                 "TensorLocationSettings.minElementsForReplicatedTensorSharding expects a "
                 "non-negative integer, got " +
                     std::to_string(elements) + ".");
  }
  minElementsForSharding_ = elements;
  return *this;
}

TensorLocationOptions&
TensorLocationOptions::setOptimizerLocation(const TensorLocationSettings& location) {
  session_->tensorLocations.optimizer = hostSettings(location);
  return *this;
}
TensorLocationSettings TensorLocationOptions::optimizerLocation() const {
  return publicSettings(session_->tensorLocations.optimizer);
}

TensorLocationOptions&
TensorLocationOptions::setWeightLocation(const TensorLocationSettings& location) {
  session_->tensorLocations.weights = hostSettings(location);
  return *this;
}
TensorLocationSettings TensorLocationOptions::weightLocation() const {
  return publicSettings(session_->tensorLocations.weights);
}

TensorLocationOptions&
TensorLocationOptions::setAccumulatorLocation(const TensorLocationSettings& location) {
  session_->tensorLocations.accumulators = hostSettings(location);
  return *this;
}
TensorLocationSettings TensorLocationOptions::accumulatorLocation() const {
  return publicSettings(session_->tensorLocations.accumulators);
}

TensorLocationOptions&
TensorLocationOptions::setActivationLocation(const TensorLocationSettings& location) {
  session_->tensorLocations.activations = hostSettings(location);
  return *this;
}
TensorLocationSettings TensorLocationOptions::activationLocation() const {
  return publicSettings(session_->tensorLocations.activations);
}

TensorLocationOptions& TensorLocationOptions::numIOTiles(int64_t tiles) {
  if (tiles < 32 || tiles > 192 || tiles % 2 != 0) {
    refuseOption("TensorLocations.numIOTiles",
                 "numIOTiles must be an even number between 32 and 192. TensorLocations.numIOTiles "
                 "got " +
                     std::to_string(tiles) + ".");
  }
  session_->tensorLocations.numIoTiles = tiles;
  return *this;
}
int64_t TensorLocationOptions::numIOTiles() const { return session_->tensorLocations.numIoTiles; }

SimulatorOptions& SimulatorOptions::numIpus(int64_t count) {
  session_->simulator.numIpus = positive("Simulator.numIpus", count);
  return *this;
}
int64_t SimulatorOptions::numIpus() const { return session_->simulator.numIpus.value_or(0); }

SimulatorOptions& SimulatorOptions::ipuVersion(const std::string& version) {
  device::ChipVersion chip;
  if (!device::parseChipVersion(version, &chip)) {
    refuseOption("Simulator.ipuVersion",
                 "Simulator.ipuVersion expects 'Mk1', 'Mk2' or 'Bow', got '" + version + "'.");
  }
  session_->simulator.chip = chip;
  return *this;
}
std::string SimulatorOptions::ipuVersion() const {
  return device::chipVersionName(session_->simulator.chip);
}

SimulatorOptions& SimulatorOptions::memoryPerIpu(uint64_t bytes) {
  if (bytes < 1) {
    refuseOption("Simulator.memoryPerIpu",
                 "Simulator.memoryPerIpu expects a positive size, got 0.");
  }
  session_->simulator.memoryPerIpu = bytes;
  return *this;
}
uint64_t SimulatorOptions::memoryPerIpu() const {
  return session_->simulator.memoryPerIpu.value_or(0);
}

SimulatorOptions& SimulatorOptions::memoryPerIpu(const std::string& size) {
  const std::optional<uint64_t> bytes = device::parseMemorySize(size);
  if (!bytes) {
    refuseOption("Simulator.memoryPerIpu",
                 "Simulator.memoryPerIpu expects a size in bytes or a string such as '64MiB' or "
                 "'512KB', got '" +
                     size + "'.");
  }
  session_->simulator.memoryPerIpu = *bytes;
  return *this;
}

SimulatorOptions& SimulatorOptions::threadsPerIpu(int64_t threads) {
  session_->simulator.threadsPerIpu = positive("Simulator.threadsPerIpu", threads);
  return *this;
}
int64_t SimulatorOptions::threadsPerIpu() const {
  return session_->simulator.threadsPerIpu.value_or(0);
}

SimulatorOptions& SimulatorOptions::costOnly(bool enabled) {
  session_->simulator.costOnly = enabled;
  return *this;
}
bool SimulatorOptions::costOnly() const { return session_->simulator.costOnly; }

SimulatorOptions& SimulatorOptions::allowOverCapacity(bool enabled) {
  session_->simulator.allowOverCapacity = enabled;
  return *this;
}
bool SimulatorOptions::allowOverCapacity() const { return session_->simulator.allowOverCapacity; }

Options& Options::deviceIterations(int64_t iterations) {
  session_->deviceIterations = positive("deviceIterations", iterations);
  return *this;
}
int64_t Options::deviceIterations() const { return session_->deviceIterations; }

Options& Options::replicationFactor(int64_t replicas) {
  session_->replicationFactor = positive("replicationFactor", replicas);
  return *this;
}
int64_t Options::replicationFactor() const { return session_->replicationFactor; }

Options& Options::broadcastBuffers(bool broadcast) {
  session_->broadcastBuffers = broadcast;
  return *this;
}
bool Options::broadcastBuffers() const { return session_->broadcastBuffers; }

namespace {

host::OutputMode hostOutputMode(OutputMode mode) {
  switch (mode) {
  case OutputMode::Final: return host::OutputMode::Final;
  case OutputMode::EveryN: return host::OutputMode::EveryN;
  case OutputMode::All: return host::OutputMode::All;
  case OutputMode::Sum: return host::OutputMode::Sum;
  case OutputMode::Default: break;
  }
  return host::OutputMode::Default;
}

} // namespace

Options& Options::outputMode(OutputMode mode, int64_t period) {
  session_->outputMode = hostOutputMode(mode);
  session_->outputReturnPeriod =
      mode == OutputMode::EveryN ? positive("outputMode's period", period, "outputMode") : 1;
  return *this;
}
OutputMode Options::outputMode() const {
  switch (session_->outputMode) {
  case host::OutputMode::Final: return OutputMode::Final;
  case host::OutputMode::EveryN: return OutputMode::EveryN;
  case host::OutputMode::All: return OutputMode::All;
  case host::OutputMode::Sum: return OutputMode::Sum;
  case host::OutputMode::Default: break;
  }
  return OutputMode::Default;
}
int64_t Options::outputReturnPeriod() const { return session_->outputReturnPeriod; }

Options& Options::anchorTensor(const std::string& shortName, const std::string& longName,
                               std::optional<OutputMode> mode, int64_t period) {
  for (const auto& [name, value] : {std::pair("shortName", &shortName), {"longName", &longName}}) {
    if (value->empty()) {
      refuseOption("anchorTensor",
                   strCat("anchorTensor expects a non-empty string as ", name, ", got ''."));
    }
  }
  host::Anchor anchor{shortName, longName, std::nullopt, 1};
  if (mode.has_value()) {
    anchor.mode = hostOutputMode(*mode);
    if (*mode == OutputMode::EveryN) {
      anchor.period =
          positive("anchorTensor(..., OutputMode::EveryN, period)", period, "anchorTensor");
    }
  }
  std::vector<host::Anchor>& anchors = session_->anchors;
  const auto same = std::find_if(anchors.begin(), anchors.end(), [&](const host::Anchor& each) {
    return each.shortName == shortName;
  });
  if (same != anchors.end()) {
    *same = anchor;
  } else {
    anchors.push_back(anchor);
  }
  return *this;
}

std::vector<std::string> Options::anchoredTensors() const {
  std::vector<std::string> names;
  for (const host::Anchor& anchor : session_->anchors)
    names.push_back(anchor.shortName);
  return names;
}

Options& Options::randomSeed(uint64_t seed) {
  session_->randomSeed = seed;
  return *this;
}
uint64_t Options::randomSeed() const { return session_->randomSeed.value_or(0); }

Options& Options::prefetchDepth(int64_t depth) {
  if (depth < 0) {
    refuseOption(
        "prefetchDepth",
        "prefetchDepth expects a non-negative integer (the buffering depth; 2 or more prepares "
        "inputs ahead), got " +
            std::to_string(depth) + ".");
  }
  session_->prefetchDepth = depth;
  return *this;
}
int64_t Options::prefetchDepth() const { return session_->prefetchDepth; }

Options& Options::setAvailableMemoryProportion(const std::map<std::string, double>& proportions) {
  std::map<int64_t, double> byIpu;
  for (const auto& [name, proportion] : proportions) {
    const bool named = name.size() > 3 && name.compare(0, 3, "IPU") == 0 && name.size() < 12 &&
                       std::all_of(name.begin() + 3, name.end(), [](char c) {
                         return std::isdigit(static_cast<unsigned char>(c));
                       });
    if (!named) {
      refuseOption("setAvailableMemoryProportion",
                   "setAvailableMemoryProportion: key '" + name +
                       "' should name an IPU as 'IPU<n>', such as 'IPU0'.");
    }
    if (!(proportion > 0.0 && proportion <= 1.0)) {
      refuseOption("setAvailableMemoryProportion",
                   "setAvailableMemoryProportion: the proportion for " + name +
                       " must be a number in (0, 1], got " + strCat(proportion) + ".");
    }
    byIpu[std::stoll(name.substr(3))] = proportion;
  }
  session_->availableMemoryProportion = std::move(byIpu);
  return *this;
}
const std::map<int64_t, double>& Options::availableMemoryProportion() const {
  return session_->availableMemoryProportion;
}

Options& Options::setExecutionStrategy(const ExecutionStrategy& strategy) {
  session_->executionStrategy = hostStrategy(strategy);
  strategy_ = strategy;
  return *this;
}

Options& Options::enableSyntheticData(bool enabled) {
  session_->syntheticData = enabled;
  return *this;
}
bool Options::syntheticData() const { return session_->syntheticData; }

Options& Options::disableModuleNamescope() {
  session_->moduleNamescope = false;
  return *this;
}
bool Options::moduleNamescope() const { return session_->moduleNamescope; }

Options& Options::enableProfiling(const std::string& directory) {
  session_->profileDirectory = api::checkedProfileDirectory("enableProfiling", directory);
  return *this;
}
std::string Options::profileDirectory() const { return session_->profileDirectory.value_or(""); }

Options& Options::enableExecutableCaching(const std::string& directory) {
  if (directory.empty()) {
    refuseOption("enableExecutableCaching",
                 "enableExecutableCaching expects a directory path (a non-empty string), got ''. "
                 "Call disableExecutableCaching() to turn caching off.");
  }
  session_->executableCache = {host::ExecutableCache::Source::Directory, directory};
  return *this;
}
Options& Options::disableExecutableCaching() {
  session_->executableCache = {host::ExecutableCache::Source::Off, ""};
  return *this;
}
std::string Options::executableCacheDirectory() const {
  return host::cacheDirectory(session_->executableCache).value_or("");
}

Options& Options::modelName(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    refuseOption("modelName",
                 "modelName expects a non-empty name without '/' (it names a directory), got '" +
                     name + "'.");
  }
  session_->modelName = name;
  return *this;
}
std::string Options::modelName() const { return session_->modelName.value_or(""); }

} // namespace popsim
