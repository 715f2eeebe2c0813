#pragma once

// The options of a session: how a model is compiled and run, as plain
// structs. Both faces fill them: Python's popsim.Options setters write these
// fields (python/popsim/options.py, through the bindings), and the public C++
// popsim::Options (include/popsim/options.h) holds one. Everything the host
// runtime does reads them here, so an option exists once: a field below, a
// setter in each face, and the stage that acts on it (ARCHITECTURE.md,
// "Adding an option").
//
// The faces check what users give (PopTorch's messages, in Python's
// spelling); what depends on the model or on several options together is
// checked when the host builds the compile options
// (compile_options_builder.h).

#include "device/chip_spec.h"
#include "host/execution_strategy.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace popsim::host {

// Which device iterations' outputs a call returns (Python's popsim.OutputMode,
// with its values).
enum class OutputMode {
  Final = 0,  // only the last iteration's
  EveryN = 1, // every N-th iteration's
  All = 2,    // every iteration's, concatenated along dimension 0
  Sum = 3,    // the elementwise sum over all iterations
  Default = 4 // All for inference, Final for training
};

// How a step combines its micro-batches' (and replicas') gradients.
enum class ReductionType { Sum = 0, Mean = 1, NoReduction = 2 };
// When a mean divides: Running keeps a running mean, Post divides the sum.
enum class MeanReductionStrategy { Running = 0, Post = 1, PostAndLoss = 2 };
// How float16 and float32 operands of one op combine.
enum class HalfFloatCasting { FloatDowncastToHalf = 0, HalfUpcastToFloat = 1, Default = 2 };
// When a model attaches to its IPUs (Never: it only compiles).
enum class ConnectionType { Always = 0, OnDemand = 1, Never = 2 };
// How real IPUs synchronise with the host (recorded; popsim syncs fully).
enum class SyncPattern { Full = 0, SinglePipeline = 1, ReplicaAndLadder = 2 };
// How replicas form groups (Python's popsim.CommGroupType).
enum class CommGroupType { All = 0, Consecutive = 1, Orthogonal = 2, Ungrouped = 3 };
// Poplar's streamCallbacks.multiThreadMode.
enum class StreamCallbackMode { SingleThread, Collaborative, Dedicated };

// Where one kind of tensor lives (Python's popsim.TensorLocationSettings).
struct TensorLocationSettings {
  bool onChip = true;
  int64_t minElementsForOffChip = 0;
  bool replicatedTensorSharding = false;
  int64_t minElementsForSharding = 0;
  bool ioTilesToLoad = false;
  bool ioTilesToStore = false;
};

// Options.Training.
struct TrainingOptions {
  int64_t gradientAccumulation = 1;
  ReductionType reduction = ReductionType::Mean;
  MeanReductionStrategy meanStrategy = MeanReductionStrategy::Post;
  bool recomputation = false;
  bool automaticLossScaling = false;
  // PopART's automaticLossScalingSettings (binEdgeLocation,
  // thresholdUpperCountProportion, updatePeriod).
  double lossScalingBinEdge = 0.125;
  double lossScalingThreshold = 1e-7;
  int64_t lossScalingUpdatePeriod = 1;
};

// Options.Precision.
struct PrecisionOptions {
  // Matmuls and convolutions of float16 operands sum partials in float16.
  bool halfPartials = false;
  // Batch norms' float16 running statistics are kept in float32.
  bool runningStatisticsAlwaysFloat = true;
  HalfFloatCasting halfFloatCasting = HalfFloatCasting::Default;
  bool floatingPointExceptions = false;
  bool stochasticRounding = false;
};

// Options.Simulator: the simulated machine (popsim's own).
struct SimulatorOptions {
  // IPUs of the system, every replica's (unset: as many as the model uses).
  std::optional<int64_t> numIpus;
  device::ChipVersion chip = device::ChipVersion::Mk2;
  // Bytes of each IPU's memory (unset: the chip's).
  std::optional<uint64_t> memoryPerIpu;
  // Host threads each simulated IPU computes with (unset: a share).
  std::optional<int64_t> threadsPerIpu;
  bool costOnly = false;
  bool allowOverCapacity = false;
};

// Options.TensorLocations.
struct TensorLocationOptions {
  TensorLocationSettings optimizer;
  TensorLocationSettings weights;
  TensorLocationSettings accumulators;
  TensorLocationSettings activations;
  int64_t numIoTiles = 0;
};

// Options.Distributed: which process of a multi-process job this is.
struct DistributedOptions {
  int64_t numProcesses = 1;
  int64_t processId = 0;
};

// The threads that run the host's side of transfers (Poplar's stream
// callbacks), from the session's engine options; POPLAR_ENGINE_OPTIONS
// overrides them option by option (host_threads.h).
struct StreamCallbackThreads {
  std::optional<StreamCallbackMode> mode;
  // numWorkerThreads: a count, or "auto" (a thread per replica).
  std::optional<int64_t> workers;
  bool autoWorkers = false;
};

// Options.inputReplicaGrouping: which replicas take the same input data.
struct InputReplicaGrouping {
  int64_t size = 1;
  CommGroupType type = CommGroupType::Ungrouped;
};

// Options.anchorTensor: a tensor the model does not output, returned too.
struct Anchor {
  std::string shortName;
  std::string longName;
  std::optional<OutputMode> mode; // unset: the model's
  int64_t period = 1;
};

// Where compiled programs are cached (Options.enableExecutableCaching).
struct ExecutableCache {
  enum class Source { Environment, Off, Directory };
  Source source = Source::Environment; // POPSIM_CACHE_DIR or POPTORCH_CACHE_DIR
  std::string directory;
};

struct SessionOptions {
  int64_t deviceIterations = 1;
  int64_t replicationFactor = 1;
  InputReplicaGrouping inputReplicaGrouping;
  OutputMode outputMode = OutputMode::Default;
  int64_t outputReturnPeriod = 1;
  // Unset: drawn from torch's initial seed when the model compiles.
  std::optional<uint64_t> randomSeed;
  // Input micro-batches each IPU's host link prepares ahead
  // (PopART's defaultPrefetchBufferingDepth).
  int64_t prefetchDepth = 1;
  // availableMemoryProportion by IPU index.
  std::map<int64_t, double> availableMemoryProportion;
  std::optional<ExecutionStrategy> executionStrategy;
  bool autoRoundNumIpus = false;
  bool syntheticData = false;
  bool moduleNamescope = true;
  bool broadcastBuffers = true;
  ConnectionType connectionType = ConnectionType::Always;
  SyncPattern syncPattern = SyncPattern::Full;
  std::vector<std::string> updatableNamedBuffers;
  // Unset: torch's and popsim's own directories.
  std::optional<std::vector<std::string>> sourceLocationExcludes;
  ExecutableCache executableCache;
  std::optional<std::string> profileDirectory;
  std::optional<std::string> modelName;
  std::optional<std::string> logDirectory;
  std::optional<int64_t> ipuId;
  std::vector<Anchor> anchors;
  bool relaxOptimizerAttributesChecks = false;
  bool useIpuModel = false;
  bool showCompilationProgressBar = true;
  // PopART's instrumentWithHardwareCycleCounter (Options.logCycleCount).
  bool logCycleCount = false;
  // Jit.traceModel: PopTorch's legacy tracing frontend.
  bool traceModel = false;
  StreamCallbackThreads streamCallbacks;

  TrainingOptions training;
  PrecisionOptions precision;
  SimulatorOptions simulator;
  TensorLocationOptions tensorLocations;
  DistributedOptions distributed;

  // The output mode a call returns in: Default resolved for the kind of model.
  OutputMode resolvedOutputMode(bool training) const;
  // Whether ops mixing float16 and float32 operands compute in float16:
  // FloatDowncastToHalf, or Default under the legacy tracing frontend (as in
  // PopTorch 3, Default is PyTorch's promotion otherwise).
  bool downcastsMixedFloats() const;
  // Micro-batches of a call: deviceIterations x gradientAccumulation.
  int64_t microBatchesPerCall() const { return deviceIterations * training.gradientAccumulation; }
};

// Python's name of an output mode ("EveryN").
const char* outputModeName(OutputMode mode);

} // namespace popsim::host
