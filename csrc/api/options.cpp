// popsim::Options (include/popsim/options.h): each setter checks its value as
// Python's popsim.Options does, with the same messages.
#include "popsim/options.h"

#include "api/error_classes.h"
#include "api/session_profile.h"
#include "device/chip_spec.h"
#include "device/memory_size.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace popsim {
namespace {

[[noreturn]] void refuse(const std::string& message) {
  throw OptionError(Error(ErrorKind::InvalidOption, message));
}

int64_t positive(const char* setter, int64_t value) {
  if (value < 1) {
    refuse(std::string(setter) + " expects a positive integer, got " + std::to_string(value) + ".");
  }
  return value;
}

} // namespace

ExecutionStrategy::ExecutionStrategy(Kind kind,
                                     std::vector<std::pair<std::string, int64_t>> modules,
                                     PipelineSchedule schedule)
    : kind_(kind), modules_(std::move(modules)), schedule_(schedule) {
  const char* name = kind == Kind::Pipelined ? "PipelinedExecution" : "ShardedExecution";
  for (const auto& [module, ipu] : modules_) {
    if (module.empty()) {
      refuse(std::string("popsim::") + name +
             " expects module paths as named_modules() names them (\"layer1\"), got an empty "
             "one.");
    }
    if (ipu < 0) {
      refuse(std::string("popsim::") + name + " places module '" + module + "' on IPU " +
             std::to_string(ipu) + "; IPUs are numbered from 0.");
    }
  }
}

PipelinedExecution::PipelinedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus,
                                       PipelineSchedule schedule)
    : ExecutionStrategy(Kind::Pipelined, std::move(modulesToIpus), schedule) {}

ShardedExecution::ShardedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus)
    : ExecutionStrategy(Kind::Sharded, std::move(modulesToIpus), PipelineSchedule::Sequential) {}

TrainingOptions& TrainingOptions::gradientAccumulation(int64_t microBatches) {
  gradientAccumulation_ = positive("Training.gradientAccumulation", microBatches);
  return *this;
}

TrainingOptions& TrainingOptions::recomputation(bool enabled) {
  recomputation_ = enabled;
  return *this;
}

TrainingOptions& TrainingOptions::accumulationAndReplicationReductionType(ReductionType type) {
  reductionType_ = type;
  return *this;
}

TrainingOptions& TrainingOptions::setMeanAccumulationAndReplicationReductionStrategy(
    MeanReductionStrategy strategy) {
  meanStrategy_ = strategy;
  return *this;
}

PrecisionOptions& PrecisionOptions::halfFloatCasting(HalfFloatCastingBehavior behaviour) {
  halfFloatCasting_ = behaviour;
  return *this;
}

PrecisionOptions& PrecisionOptions::setPartialsType(c10::ScalarType type) {
  if (type != c10::ScalarType::Float && type != c10::ScalarType::Half) {
    refuse(std::string("Precision.setPartialsType expects at::kFloat or at::kHalf, got ") +
           c10::toString(type) + ".");
  }
  partialsType_ = type;
  return *this;
}

PrecisionOptions& PrecisionOptions::enableStochasticRounding(bool enabled) {
  stochasticRounding_ = enabled;
  return *this;
}

PrecisionOptions& PrecisionOptions::enableFloatingPointExceptions(bool enabled) {
  floatingPointExceptions_ = enabled;
  return *this;
}

TensorLocationSettings& TensorLocationSettings::useOnChipStorage(bool use) {
  onChip_ = use;
  return *this;
}

TensorLocationSettings& TensorLocationSettings::minElementsForOffChip(int64_t elements) {
  if (elements < 0) {
    refuse("TensorLocationSettings.minElementsForOffChip expects a non-negative integer, got " +
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

TensorLocationOptions&
TensorLocationOptions::setOptimizerLocation(const TensorLocationSettings& location) {
  optimizer_ = location;
  return *this;
}

TensorLocationOptions&
TensorLocationOptions::setWeightLocation(const TensorLocationSettings& location) {
  weights_ = location;
  return *this;
}

TensorLocationOptions&
TensorLocationOptions::setAccumulatorLocation(const TensorLocationSettings& location) {
  accumulators_ = location;
  return *this;
}

TensorLocationOptions&
TensorLocationOptions::setActivationLocation(const TensorLocationSettings& location) {
  activations_ = location;
  return *this;
}

TensorLocationOptions& TensorLocationOptions::numIOTiles(int64_t tiles) {
  if (tiles < 32 || tiles > 192 || tiles % 2 != 0) {
    refuse("numIOTiles must be an even number between 32 and 192. TensorLocations.numIOTiles "
           "got " +
           std::to_string(tiles) + ".");
  }
  numIOTiles_ = tiles;
  return *this;
}

SimulatorOptions& SimulatorOptions::numIpus(int64_t count) {
  numIpus_ = positive("Simulator.numIpus", count);
  return *this;
}

SimulatorOptions& SimulatorOptions::ipuVersion(const std::string& version) {
  device::ChipVersion chip;
  if (!device::parseChipVersion(version, &chip)) {
    refuse("Simulator.ipuVersion expects 'Mk1', 'Mk2' or 'Bow', got '" + version + "'.");
  }
  ipuVersion_ = device::chipVersionName(chip);
  return *this;
}

SimulatorOptions& SimulatorOptions::memoryPerIpu(uint64_t bytes) {
  if (bytes < 1) {
    refuse("Simulator.memoryPerIpu expects a positive size, got 0.");
  }
  memoryPerIpu_ = bytes;
  return *this;
}

SimulatorOptions& SimulatorOptions::memoryPerIpu(const std::string& size) {
  const std::optional<uint64_t> bytes = device::parseMemorySize(size);
  if (!bytes) {
    refuse("Simulator.memoryPerIpu expects a size in bytes or a string such as '64MiB' or "
           "'512KB', got '" +
           size + "'.");
  }
  memoryPerIpu_ = *bytes;
  return *this;
}

SimulatorOptions& SimulatorOptions::threadsPerIpu(int64_t threads) {
  threadsPerIpu_ = positive("Simulator.threadsPerIpu", threads);
  return *this;
}

SimulatorOptions& SimulatorOptions::costOnly(bool enabled) {
  costOnly_ = enabled;
  return *this;
}

Options& Options::deviceIterations(int64_t iterations) {
  deviceIterations_ = positive("deviceIterations", iterations);
  return *this;
}

Options& Options::outputMode(OutputMode mode, int64_t period) {
  outputMode_ = mode;
  outputReturnPeriod_ = mode == OutputMode::EveryN ? positive("outputMode's period", period) : 1;
  return *this;
}

Options& Options::randomSeed(uint64_t seed) {
  randomSeed_ = seed;
  return *this;
}

Options& Options::prefetchDepth(int64_t depth) {
  if (depth < 0) {
    refuse("prefetchDepth expects a non-negative integer (0 turns prefetching off), got " +
           std::to_string(depth) + ".");
  }
  prefetchDepth_ = depth;
  return *this;
}

Options& Options::setAvailableMemoryProportion(const std::map<std::string, double>& proportions) {
  std::map<int64_t, double> byIpu;
  for (const auto& [name, proportion] : proportions) {
    const bool named = name.size() > 3 && name.compare(0, 3, "IPU") == 0 && name.size() < 12 &&
                       std::all_of(name.begin() + 3, name.end(), [](char c) {
                         return std::isdigit(static_cast<unsigned char>(c));
                       });
    if (!named) {
      refuse("setAvailableMemoryProportion: key '" + name +
             "' should name an IPU as 'IPU<n>', such as 'IPU0'.");
    }
    if (!(proportion > 0.0 && proportion <= 1.0)) {
      refuse("setAvailableMemoryProportion: the proportion for " + name +
             " must be a number in (0, 1], got " + std::to_string(proportion) + ".");
    }
    byIpu[std::stoll(name.substr(3))] = proportion;
  }
  availableMemoryProportion_ = std::move(byIpu);
  return *this;
}

Options& Options::setExecutionStrategy(const ExecutionStrategy& strategy) {
  strategy_ = strategy;
  return *this;
}

Options& Options::enableSyntheticData(bool enabled) {
  syntheticData_ = enabled;
  return *this;
}

Options& Options::disableModuleNamescope() {
  moduleNamescope_ = false;
  return *this;
}

Options& Options::enableProfiling(const std::string& directory) {
  profileDirectory_ = api::checkedProfileDirectory("enableProfiling", directory);
  return *this;
}

Options& Options::modelName(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    refuse("modelName expects a non-empty name without '/' (it names a directory), got '" + name +
           "'.");
  }
  modelName_ = name;
  return *this;
}

} // namespace popsim
