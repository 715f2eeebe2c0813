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
//
// The values live in the host runtime's session options, which Python's
// popsim.Options writes too (csrc/host/session_options.h): the setters here
// check what C++ users give and write them there, so an option means the
// same in both languages.

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace popsim {

namespace host {
struct SessionOptions; ///< the host runtime's (csrc/host/session_options.h)
}

/// Which device iterations' outputs a call returns (Python's popsim.OutputMode).
enum class OutputMode {
  Final,  ///< only the last iteration's
  EveryN, ///< every N-th device iteration's, with all its accumulated micro-batches (N: the period)
  All,    ///< every iteration's, concatenated along dimension 0
  Sum,    ///< the elementwise sum over all iterations
  Default, ///< All for inference
};

/// How a pipeline's stages share the IPUs' time (Python's
/// popsim.PipelineSchedule).
enum class PipelineSchedule {
  Interleaved, ///< one forward, one backward per pipeline cycle (the default)
  Grouped,     ///< all forwards, then all backwards
  Sequential,  ///< one task at a time
};

/// Where each part of the model runs. TorchScript modules carry no
/// popsim.Block markers, so blocks are given by module path, as
/// named_modules() names them: each listed module starts a block on the IPU
/// given, as popsim.BeginBlock(module, ipu_id=...) does (the module and every
/// op after it, until the next listed module, run there; ops before the first
/// listed module run with it). Each block is a stage of its own, in the order
/// listed, which must be the order forward() runs them.
class ExecutionStrategy {
public:
  enum class Kind { Pipelined, Sharded };
  Kind kind() const { return kind_; }
  /// (module path, IPU) in stage order.
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

/// Every IPU works on a different micro-batch at once (Python's
/// popsim.PipelinedExecution); inference needs deviceIterations of at least
/// the number of stages.
class PipelinedExecution : public ExecutionStrategy {
public:
  explicit PipelinedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus,
                              PipelineSchedule schedule = PipelineSchedule::Interleaved);
};

/// One stage at a time, one micro-batch at a time (Python's
/// popsim.ShardedExecution): the least memory, no minimum micro-batch count.
class ShardedExecution : public ExecutionStrategy {
public:
  explicit ShardedExecution(std::vector<std::pair<std::string, int64_t>> modulesToIpus);
};

/// How a step combines its micro-batches' gradients (Python's
/// popsim.ReductionType).
enum class ReductionType { Sum, Mean };

/// When a mean divides (Python's popsim.MeanReductionStrategy): Post divides
/// the summed accumulator when the step reads it; Running keeps a running
/// mean, which never overflows where the sum would.
enum class MeanReductionStrategy { Running, Post };

/// How float16 and float32 operands of one op combine (Python's
/// popsim.HalfFloatCastingBehavior): PyTorch's promotion (the default), or
/// float32 operands cast to float16.
enum class HalfFloatCastingBehavior { Default, FloatDowncastToHalf, HalfUpcastToFloat };

/// The part of the options a group (Options.Training, ...) sets; a group is
/// a member of its Options and is neither copied nor moved on its own.
class OptionGroup {
public:
  OptionGroup(const OptionGroup&) = delete;
  OptionGroup& operator=(const OptionGroup&) = delete;

protected:
  explicit OptionGroup(host::SessionOptions* session) : session_(session) {}
  host::SessionOptions* session_;
  friend class Options;
};

/// Options.Training: options of training models (an inference session
/// requires gradientAccumulation 1).
class TrainingOptions : public OptionGroup {
public:
  using OptionGroup::OptionGroup;
  TrainingOptions& gradientAccumulation(int64_t microBatches);
  int64_t gradientAccumulation() const;
  TrainingOptions& recomputation(bool enabled);
  bool recomputation() const;
  /// The mean (default) or the sum of a step's micro-batches' gradients.
  TrainingOptions& accumulationAndReplicationReductionType(ReductionType type);
  ReductionType accumulationAndReplicationReductionType() const;
  TrainingOptions&
  setMeanAccumulationAndReplicationReductionStrategy(MeanReductionStrategy strategy);
  MeanReductionStrategy meanReductionStrategy() const;
  /// Automatic loss scaling, as PopART does it: every step, the float16
  /// gradients are counted above a bin edge and the factor (starting at the
  /// optimizer's lossScaling) halves when too many are, doubles otherwise.
  /// It needs float16 gradients (a module converted with .half()).
  TrainingOptions& setAutomaticLossScaling(bool enabled);
  bool automaticLossScaling() const;
};

/// Options.Precision: float16 arithmetic.
class PrecisionOptions : public OptionGroup {
public:
  using OptionGroup::OptionGroup;
  /// The type matmuls and convolutions of float16 operands sum their partial
  /// products in: at::kFloat (the default) or at::kHalf, as an IPU's AMP
  /// units do with half partials.
  PrecisionOptions& setPartialsType(c10::ScalarType type);
  c10::ScalarType partialsType() const;
  PrecisionOptions& enableStochasticRounding(bool enabled);
  bool stochasticRounding() const;
  PrecisionOptions& enableFloatingPointExceptions(bool enabled);
  bool floatingPointExceptions() const;
  PrecisionOptions& halfFloatCasting(HalfFloatCastingBehavior behaviour);
  HalfFloatCastingBehavior halfFloatCasting() const;
};

/// Options.Simulator: the simulated machine (popsim's own settings).
class SimulatorOptions : public OptionGroup {
public:
  using OptionGroup::OptionGroup;
  /// How many IPUs the system has (0, the default: as many as the model uses).
  SimulatorOptions& numIpus(int64_t count);
  int64_t numIpus() const;
  /// "Mk1" (GC2), "Mk2" (GC200, the default) or "Bow".
  SimulatorOptions& ipuVersion(const std::string& version);
  std::string ipuVersion() const;
  /// Bytes of each IPU's memory (0, the default: the chip's), to size a model
  /// for part of an IPU; or a string such as "64MiB".
  SimulatorOptions& memoryPerIpu(uint64_t bytes);
  SimulatorOptions& memoryPerIpu(const std::string& size);
  uint64_t memoryPerIpu() const;
  /// Host threads each simulated IPU computes with (0: a share of the host's).
  SimulatorOptions& threadsPerIpu(int64_t threads);
  int64_t threadsPerIpu() const;
  /// Size without computing: compiling, the memory plan and the clock run as
  /// always, no kernel runs, and a call's outputs are tensors on torch's meta
  /// device (their shapes and dtypes, no values).
  SimulatorOptions& costOnly(bool enabled = true);
  bool costOnly() const;
  /// A cost-only program that does not fit its IPUs' memory compiles anyway,
  /// so that sizingReport() says by how much (needs costOnly; sizeJob sets it).
  SimulatorOptions& allowOverCapacity(bool enabled = true);
  bool allowOverCapacity() const;
};

/// Where one kind of tensor lives (Python's popsim.TensorLocationSettings):
/// on chip by default; off chip in Streaming Memory, streamed in for each op
/// that reads it and out after each op that writes it.
class TensorLocationSettings {
public:
  TensorLocationSettings& useOnChipStorage(bool use = true);
  bool onChip() const { return onChip_; }
  /// Tensors of fewer elements stay on chip whatever useOnChipStorage says.
  TensorLocationSettings& minElementsForOffChip(int64_t elements);
  int64_t minElementsForOffChip() const { return minElementsForOffChip_; }
  /// Off chip: stream through the IPU's IO tiles (Options.TensorLocations.numIOTiles),
  /// beside the compute.
  TensorLocationSettings& useIOTilesToLoad(bool use = true);
  bool ioTilesToLoad() const { return ioTilesToLoad_; }
  TensorLocationSettings& useIOTilesToStore(bool use = true);
  bool ioTilesToStore() const { return ioTilesToStore_; }
  /// Each replica of a replicated session stores only a shard of the tensors
  /// (the optimizer state, or the weights, which are gathered before use),
  /// and updates only its shard; a sharded weight's optimizer state is
  /// sharded with it. Floating-point parameters only.
  TensorLocationSettings& useReplicatedTensorSharding(bool use = true);
  bool replicatedTensorSharding() const { return replicatedTensorSharding_; }
  /// Parameters of fewer elements stay whole on every replica.
  TensorLocationSettings& minElementsForReplicatedTensorSharding(int64_t elements);
  int64_t minElementsForReplicatedTensorSharding() const { return minElementsForSharding_; }

private:
  bool onChip_ = true;
  int64_t minElementsForOffChip_ = 0;
  bool replicatedTensorSharding_ = false;
  int64_t minElementsForSharding_ = 0;
  bool ioTilesToLoad_ = false;
  bool ioTilesToStore_ = false;
};

/// Options.TensorLocations: where the optimizer state, weights, gradient
/// accumulators and stashed activations live, and the IO tiles.
class TensorLocationOptions : public OptionGroup {
public:
  using OptionGroup::OptionGroup;
  TensorLocationOptions& setOptimizerLocation(const TensorLocationSettings& location);
  TensorLocationSettings optimizerLocation() const;
  TensorLocationOptions& setWeightLocation(const TensorLocationSettings& location);
  TensorLocationSettings weightLocation() const;
  TensorLocationOptions& setAccumulatorLocation(const TensorLocationSettings& location);
  TensorLocationSettings accumulatorLocation() const;
  TensorLocationOptions& setActivationLocation(const TensorLocationSettings& location);
  TensorLocationSettings activationLocation() const;
  /// Tiles of each IPU set aside for host I/O and off-chip transfers: an even
  /// number from 32 to 192 (0, the default: none).
  TensorLocationOptions& numIOTiles(int64_t tiles);
  int64_t numIOTiles() const;
};

class Options {
  /// First: the groups below write into it.
  std::unique_ptr<host::SessionOptions> session_;

public:
  Options();
  Options(const Options& other);
  Options& operator=(const Options& other);
  ~Options();

  TrainingOptions Training;
  PrecisionOptions Precision;
  TensorLocationOptions TensorLocations;
  SimulatorOptions Simulator;

  /// Micro-batches each call runs, stacked along dimension 0 of its inputs.
  Options& deviceIterations(int64_t iterations);
  int64_t deviceIterations() const;
  /// Copies of the model that run in data parallel, each on IPUs of its own
  /// (default 1): a call's inputs hold every replica's micro-batches, as
  /// Python lays them out (for each micro-batch step, one micro-batch per
  /// replica, replica by replica), and outputs come back the same way; a
  /// training session sums the replicas' gradients before each step.
  /// Simulator.numIpus counts every replica's IPUs.
  Options& replicationFactor(int64_t replicas);
  int64_t replicationFactor() const;
  /// Whether a replicated training session copies replica 0's buffers (batch
  /// norm's running statistics, ...) to the others after each call (default
  /// true), or lets each keep its own.
  Options& broadcastBuffers(bool broadcast);
  bool broadcastBuffers() const;
  /// Which iterations' outputs a call returns; `period` is EveryN's N.
  Options& outputMode(OutputMode mode, int64_t period = 1);
  OutputMode outputMode() const;
  int64_t outputReturnPeriod() const;
  /// Options.anchorTensor: each call also returns the tensor `longName` names,
  /// which the session's getAnchoredTensor(shortName) gives
  /// (getTensorNames() lists the names a compiled session can anchor): a
  /// trained parameter's gradient of each micro-batch
  /// ("Gradient___<parameter>"), a parameter's or buffer's value after the
  /// call ("<name>" or "UpdatedVar___<name>"), or the loss scaling factor
  /// ("finalLossScale"). Anchors come back in the model's output mode: `mode`
  /// (unset: the model's) and EveryN's `period` must be it. Anchoring a short
  /// name again replaces its tensor.
  Options& anchorTensor(const std::string& shortName, const std::string& longName,
                        std::optional<OutputMode> mode = std::nullopt, int64_t period = 1);
  /// The anchors' short names, in the order they were first anchored.
  std::vector<std::string> anchoredTensors() const;
  /// The seed of the device's random numbers (dropout, stochastic rounding;
  /// 0 until set).
  Options& randomSeed(uint64_t seed);
  uint64_t randomSeed() const;
  /// The input streams' buffering depth (PopART's defaultPrefetchBufferingDepth,
  /// default 1): the host prepares depth - 1 micro-batches ahead.
  Options& prefetchDepth(int64_t depth);
  int64_t prefetchDepth() const;
  /// The share of each IPU's memory one matmul or convolution may use for its
  /// temporaries, by IPU name: {{"IPU0", 0.3}} (default 0.6 on every IPU).
  Options& setAvailableMemoryProportion(const std::map<std::string, double>& proportions);
  const std::map<int64_t, double>& availableMemoryProportion() const;
  Options& setExecutionStrategy(const ExecutionStrategy& strategy);
  /// None until set: the model then runs on one IPU.
  const std::optional<ExecutionStrategy>& executionStrategy() const { return strategy_; }
  /// Benchmarks without host I/O: the device uses its own data and the clock
  /// charges no host transfers.
  Options& enableSyntheticData(bool enabled);
  bool syntheticData() const;
  /// Where the session writes its profile, as Python's enableProfiling: in a
  /// subdirectory per session ("inference", "training", "inference_1", ...,
  /// or modelName's), memory.json when it compiles, trace.json and
  /// report.html after each call (see the profiling guide). Unset, the
  /// environment variable POPSIM_PROFILE_DIR names it; unset too, no profile.
  /// The directory is created when the session compiles.
  Options& enableProfiling(const std::string& directory);
  std::string profileDirectory() const;
  /// Ops are named after the module path they run in ("layer1/conv/convolution"
  /// in profiles), as in Python; this turns it off.
  Options& disableModuleNamescope();
  bool moduleNamescope() const;
  /// The session's subdirectory of the profile directory.
  Options& modelName(const std::string& name);
  std::string modelName() const;
  /// Keeps compiled programs in `directory` (created when needed, mode 0700),
  /// as Python's enableExecutableCaching: a session compiled again with the
  /// same traced model, options and popsim build, in this process or another,
  /// loads its program from there instead of compiling it. The cache and its
  /// files are Python's (one format, one set of checks): an entry another user
  /// owns or others can write, a damaged or a stale one is compiled again and
  /// replaced, with a warning on stderr. Unset, the environment variable
  /// POPSIM_CACHE_DIR (or POPTORCH_CACHE_DIR) names the directory.
  Options& enableExecutableCaching(const std::string& directory);
  /// No cache, whatever those environment variables say.
  Options& disableExecutableCaching();
  /// The directory programs are cached in ("" when caching is off).
  std::string executableCacheDirectory() const;

  /// The host runtime's session options these are (popsim's own use).
  const host::SessionOptions& session() const { return *session_; }

private:
  /// The strategy as given (the session holds what it says).
  std::optional<ExecutionStrategy> strategy_;
};

} // namespace popsim
