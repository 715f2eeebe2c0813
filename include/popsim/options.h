#pragma once

// How popsim compiles and runs a model: the C++ counterpart of Python's
// popsim.Options, with the same groups and setter names. Setters check their
// value (an invalid one throws popsim::OptionError naming the setter, the
// value and what it accepts) and return the options, so calls chain:
//
//   popsim::Options opts;
//   opts.deviceIterations(10).setExecutionStrategy(popsim::PipelinedExecution(
//       {{"layer1", 0}, {"layer2", 1}, {"layer3", 2}, {"layer4", 3}}));
//   opts.Simulator.ipuVersion("Bow");
//
// Each setter has a getter of the same name without arguments.

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace popsim {

// Which device iterations' outputs a call returns (Python's popsim.OutputMode).
enum class OutputMode {
  Final,   // only the last iteration's
  EveryN,  // every N-th iteration's (N: the period given with it)
  All,     // every iteration's, concatenated along dimension 0
  Sum,     // the elementwise sum over all iterations
  Default, // All for inference
};

// How a pipeline's stages share the IPUs' time (Python's
// popsim.PipelineSchedule).
enum class PipelineSchedule {
  Interleaved, // one forward, one backward per pipeline cycle (the default)
  Grouped,     // all forwards, then all backwards
  Sequential,  // one task at a time
};

// Where each part of the model runs. TorchScript modules carry no
// popsim.Block markers, so blocks are given by module path, as
// named_modules() names them: each listed module starts a block on the IPU
// given, as popsim.BeginBlock(module, ipu_id=...) does (the module and every
// op after it, until the next listed module, run there; ops before the first
// listed module run with it). Each block is a stage of its own, in the order
// listed, which must be the order forward() runs them.
class ExecutionStrategy {
public:
  enum class Kind { Pipelined, Sharded };
  Kind kind() const { return kind_; }
  // (module path, IPU) in stage order.
  const std::vector<std::pair<std::string, int64_t>>& modules() const { return modules_; }
  PipelineSchedule schedule() const { return schedule_; }

protected:
  ExecutionStrategy(Kind kind, std::vector<std::pair<std::string, int64_t>> modules,
                    PipelineSchedule schedule);

private:
  Kind kind_;
  std::vector<std::pair<std::string, int64_t>> modules_;
  PipelineSchedule schedule_;
};

// Every IPU works on a different micro-batch at once (Python's
// popsim.PipelinedExecution); inference needs deviceIterations of at least
// the number of stages.
class PipelinedExecution : public ExecutionStrategy {
public:
  explicit PipelinedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus,
                              PipelineSchedule schedule = PipelineSchedule::Interleaved);
};

// One stage at a time, one micro-batch at a time (Python's
// popsim.ShardedExecution): the least memory, no minimum micro-batch count.
class ShardedExecution : public ExecutionStrategy {
public:
  explicit ShardedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus);
};

// How a step combines its micro-batches' gradients (Python's
// popsim.ReductionType).
enum class ReductionType { Sum, Mean };

// When a mean divides (Python's popsim.MeanReductionStrategy): Post divides
// the summed accumulator when the step reads it; Running keeps a running
// mean, which never overflows where the sum would.
enum class MeanReductionStrategy { Running, Post };

// How float16 and float32 operands of one op combine (Python's
// popsim.HalfFloatCastingBehavior): PyTorch's promotion (the default), or
// float32 operands cast to float16.
enum class HalfFloatCastingBehavior { Default, FloatDowncastToHalf, HalfUpcastToFloat };

// Options.Training: options of training models (an inference session
// requires gradientAccumulation 1).
class TrainingOptions {
public:
  TrainingOptions& gradientAccumulation(int64_t microBatches);
  int64_t gradientAccumulation() const { return gradientAccumulation_; }
  TrainingOptions& recomputation(bool enabled);
  bool recomputation() const { return recomputation_; }
  // The mean (default) or the sum of a step's micro-batches' gradients.
  TrainingOptions& accumulationAndReplicationReductionType(ReductionType type);
  ReductionType accumulationAndReplicationReductionType() const { return reductionType_; }
  TrainingOptions&
  setMeanAccumulationAndReplicationReductionStrategy(MeanReductionStrategy strategy);
  MeanReductionStrategy meanReductionStrategy() const { return meanStrategy_; }

private:
  int64_t gradientAccumulation_ = 1;
  bool recomputation_ = false;
  ReductionType reductionType_ = ReductionType::Mean;
  MeanReductionStrategy meanStrategy_ = MeanReductionStrategy::Post;
};

// Options.Precision: float16 arithmetic.
class PrecisionOptions {
public:
  // The type matmuls and convolutions of float16 operands sum their partial
  // products in: at::kFloat (the default) or at::kHalf, as an IPU's AMP
  // units do with half partials.
  PrecisionOptions& setPartialsType(c10::ScalarType type);
  c10::ScalarType partialsType() const { return partialsType_; }
  PrecisionOptions& enableStochasticRounding(bool enabled);
  bool stochasticRounding() const { return stochasticRounding_; }
  PrecisionOptions& enableFloatingPointExceptions(bool enabled);
  bool floatingPointExceptions() const { return floatingPointExceptions_; }
  PrecisionOptions& halfFloatCasting(HalfFloatCastingBehavior behaviour);
  HalfFloatCastingBehavior halfFloatCasting() const { return halfFloatCasting_; }

private:
  HalfFloatCastingBehavior halfFloatCasting_ = HalfFloatCastingBehavior::Default;
  c10::ScalarType partialsType_ = c10::ScalarType::Float;
  bool stochasticRounding_ = false;
  bool floatingPointExceptions_ = false;
};

// Options.Simulator: the simulated machine (popsim's own settings).
class SimulatorOptions {
public:
  // How many IPUs the system has (0, the default: as many as the model uses).
  SimulatorOptions& numIpus(int64_t count);
  int64_t numIpus() const { return numIpus_; }
  // "Mk1" (GC2), "Mk2" (GC200, the default) or "Bow".
  SimulatorOptions& ipuVersion(const std::string& version);
  const std::string& ipuVersion() const { return ipuVersion_; }
  // Bytes of each IPU's memory (0, the default: the chip's), to size a model
  // for part of an IPU; or a string such as "64MiB".
  SimulatorOptions& memoryPerIpu(uint64_t bytes);
  SimulatorOptions& memoryPerIpu(const std::string& size);
  uint64_t memoryPerIpu() const { return memoryPerIpu_; }
  // Host threads each simulated IPU computes with (0: a share of the host's).
  SimulatorOptions& threadsPerIpu(int64_t threads);
  int64_t threadsPerIpu() const { return threadsPerIpu_; }
  // Size without computing: compiling, the memory plan and the clock run as
  // always, no kernel runs, and a call's outputs are tensors on torch's meta
  // device (their shapes and dtypes, no values).
  SimulatorOptions& costOnly(bool enabled = true);
  bool costOnly() const { return costOnly_; }

private:
  int64_t numIpus_ = 0;
  std::string ipuVersion_ = "Mk2";
  uint64_t memoryPerIpu_ = 0;
  int64_t threadsPerIpu_ = 0;
  bool costOnly_ = false;
};

// Where one kind of tensor lives (Python's popsim.TensorLocationSettings):
// on chip by default; off chip in Streaming Memory, streamed in for each op
// that reads it and out after each op that writes it.
class TensorLocationSettings {
public:
  TensorLocationSettings& useOnChipStorage(bool use = true);
  bool onChip() const { return onChip_; }
  // Tensors of fewer elements stay on chip whatever useOnChipStorage says.
  TensorLocationSettings& minElementsForOffChip(int64_t elements);
  int64_t minElementsForOffChip() const { return minElementsForOffChip_; }
  // Off chip: stream through the IPU's IO tiles (Options.TensorLocations.numIOTiles),
  // beside the compute.
  TensorLocationSettings& useIOTilesToLoad(bool use = true);
  bool ioTilesToLoad() const { return ioTilesToLoad_; }
  TensorLocationSettings& useIOTilesToStore(bool use = true);
  bool ioTilesToStore() const { return ioTilesToStore_; }

private:
  bool onChip_ = true;
  int64_t minElementsForOffChip_ = 0;
  bool ioTilesToLoad_ = false;
  bool ioTilesToStore_ = false;
};

// Options.TensorLocations: where the optimizer state, weights, gradient
// accumulators and stashed activations live, and the IO tiles.
class TensorLocationOptions {
public:
  TensorLocationOptions& setOptimizerLocation(const TensorLocationSettings& location);
  const TensorLocationSettings& optimizerLocation() const { return optimizer_; }
  TensorLocationOptions& setWeightLocation(const TensorLocationSettings& location);
  const TensorLocationSettings& weightLocation() const { return weights_; }
  TensorLocationOptions& setAccumulatorLocation(const TensorLocationSettings& location);
  const TensorLocationSettings& accumulatorLocation() const { return accumulators_; }
  TensorLocationOptions& setActivationLocation(const TensorLocationSettings& location);
  const TensorLocationSettings& activationLocation() const { return activations_; }
  // Tiles of each IPU set aside for host I/O and off-chip transfers: an even
  // number from 32 to 192 (0, the default: none).
  TensorLocationOptions& numIOTiles(int64_t tiles);
  int64_t numIOTiles() const { return numIOTiles_; }

private:
  TensorLocationSettings optimizer_, weights_, accumulators_, activations_;
  int64_t numIOTiles_ = 0;
};

class Options {
public:
  TrainingOptions Training;
  PrecisionOptions Precision;
  TensorLocationOptions TensorLocations;
  SimulatorOptions Simulator;

  // Micro-batches each call runs, stacked along dimension 0 of its inputs.
  Options& deviceIterations(int64_t iterations);
  int64_t deviceIterations() const { return deviceIterations_; }
  // Which iterations' outputs a call returns; `period` is EveryN's N.
  Options& outputMode(OutputMode mode, int64_t period = 1);
  OutputMode outputMode() const { return outputMode_; }
  int64_t outputReturnPeriod() const { return outputReturnPeriod_; }
  // The seed of the device's random numbers (dropout, stochastic rounding).
  Options& randomSeed(uint64_t seed);
  uint64_t randomSeed() const { return randomSeed_; }
  // Input micro-batches each IPU's host link prepares ahead (default 1).
  Options& prefetchDepth(int64_t depth);
  int64_t prefetchDepth() const { return prefetchDepth_; }
  // The share of each IPU's memory one matmul or convolution may use for its
  // temporaries, by IPU name: {{"IPU0", 0.3}} (default 0.6 on every IPU).
  Options& setAvailableMemoryProportion(const std::map<std::string, double>& proportions);
  const std::map<int64_t, double>& availableMemoryProportion() const {
    return availableMemoryProportion_;
  }
  Options& setExecutionStrategy(const ExecutionStrategy& strategy);
  // None until set: the model then runs on one IPU.
  const std::optional<ExecutionStrategy>& executionStrategy() const { return strategy_; }
  // Benchmarks without host I/O: the device uses its own data and the clock
  // charges no host transfers.
  Options& enableSyntheticData(bool enabled);
  bool syntheticData() const { return syntheticData_; }
  // Where the session writes its profile, as Python's enableProfiling: in a
  // subdirectory per session ("inference", "training", "inference_1", ...,
  // or modelName's), memory.json when it compiles, trace.json and
  // report.html after each call (see the profiling guide). Unset, the
  // environment variable POPSIM_PROFILE_DIR names it; unset too, no profile.
  // The directory is created when the session compiles.
  Options& enableProfiling(const std::string& directory);
  const std::string& profileDirectory() const { return profileDirectory_; }
  // Ops are named after the module path they run in ("layer1/conv/convolution"
  // in profiles), as in Python; this turns it off.
  Options& disableModuleNamescope();
  bool moduleNamescope() const { return moduleNamescope_; }
  // The session's subdirectory of the profile directory.
  Options& modelName(const std::string& name);
  const std::string& modelName() const { return modelName_; }

private:
  int64_t deviceIterations_ = 1;
  OutputMode outputMode_ = OutputMode::Default;
  int64_t outputReturnPeriod_ = 1;
  uint64_t randomSeed_ = 0;
  int64_t prefetchDepth_ = 1;
  std::map<int64_t, double> availableMemoryProportion_;
  std::optional<ExecutionStrategy> strategy_;
  bool syntheticData_ = false;
  std::string profileDirectory_;
  std::string modelName_;
  bool moduleNamescope_ = true;
};

} // namespace popsim
