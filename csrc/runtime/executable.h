#pragma once

#include "clock/simulated_clock.h"
#include "compiler/compile_graph.h"
#include "compiler/compiler_options.h"
#include "compiler/output_spec.h"
#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_schedule.h"
#include "compiler/pipeline_tasks.h"
#include "compiler/training/training_program.h"
#include "device/ipu_system.h"
#include "ir/graph.h"
#include "kernels/kernel.h"
#include "memory/memory_plan.h"
#include "memory/memory_report.h"
#include "memory/off_chip_placement.h"
#include "memory/op_temporaries.h"
#include "runtime/channel.h"
#include "runtime/device_memory.h"
#include "runtime/replica_group.h"
#include "runtime/tensor_view.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace popsim::runtime {

using clock::SimulatedCall;
using clock::TaskCycles;
using clock::TimelineEvent;
using compiler::OutputMode;
using compiler::OutputSpec;
using compiler::PipelineCycle;
using compiler::ProgramKind;
using compiler::ScheduledTask;
using compiler::ScheduleKind;

// How a multi-IPU program runs: all IPUs busy on different micro-batches, or
// one stage at a time (PopTorch's PipelinedExecution / ShardedExecution).
enum class ExecutionMode { Pipelined, Sharded };

using memory::TensorLocation;

struct CompileOptions {
  device::IpuSystemConfig system;
  // Iterations of the program per call. Each runs `gradientAccumulation`
  // micro-batches (then, in training, one optimizer step), so a call's inputs
  // carry deviceIterations x gradientAccumulation micro-batches stacked along
  // dimension 0, and outputs are counted per micro-batch.
  int64_t deviceIterations = 1;
  int64_t gradientAccumulation = 1;
  OutputSpec output;
  ProgramKind program = ProgramKind::Inference;
  compiler::TrainingConfig training;
  // Stage and IPU of each block (empty for a model without blocks).
  std::vector<compiler::StageAssignment> stages;
  ExecutionMode mode = ExecutionMode::Pipelined;
  // Pipelined only: a compiled executable's options() say Sequential for
  // sharded execution.
  ScheduleKind schedule = ScheduleKind::Interleaved;
  // Training: each stage's backward pass recomputes its forward activations
  // from the stashed stage inputs (less stash memory, more compute).
  bool recomputation = false;
  // Host threads each simulated IPU computes with; 0: the caller's thread
  // count for one IPU, else an equal share of the host's threads.
  int64_t threadsPerIpu = 0;
  // Input micro-batches whose host's part each IPU's host link may prepare
  // ahead of the task that reads them, into as many extra buffers (PopART's
  // prefetch buffering). With 0 an input streams when its task starts; with 1
  // or more its host's part overlaps the work before (its bytes still cross
  // on the compute tiles, or beforehand through IO tiles).
  int64_t prefetchDepth = 1;
  // Options.enableSyntheticData: no host I/O, so the simulated clock charges
  // no input or output transfers (the data comes from the device).
  bool syntheticData = false;
  // Precision.enableStochasticRounding: float16 results round stochastically,
  // from random numbers that this seed (the model's random seed) makes
  // reproducible.
  bool stochasticRounding = false;
  uint64_t stochasticRoundingSeed = 0;
  // Precision.enableFloatingPointExceptions: an op that overflows (or divides
  // by zero, or computes NaN from operands without it) fails the run, naming
  // the op and its source line.
  bool floatingPointExceptions = false;
  // Precision.setPartialsType(torch.half): float16 matmuls and convolutions
  // accumulate in float16 (the kernels, and their temporaries' partials).
  bool halfPartials = false;
  // Where each kind of tensor lives. An off-chip tensor is streamed in before
  // each task that reads it and back out after each task that writes it:
  // - the optimizer state around each weight update;
  // - weights (and buffers) around every forward, backward and update task
  //   that uses them;
  // - gradient accumulators around each micro-batch's accumulation and the
  //   update;
  // - activations: the pipeline's stash, out after the forward task that
  //   produces a value and in before the backward task that reads it.
  TensorLocation optimizerLocation;
  TensorLocation weightLocation;
  TensorLocation accumulatorLocation;
  TensorLocation activationLocation;
  // Share of each IPU's memory (by IPU index) a matmul or convolution may use
  // for its temporaries: PopTorch's availableMemoryProportion. IPUs not listed
  // use memory::kDefaultAvailableMemoryProportion.
  std::map<int64_t, double> availableMemoryProportion;
};

// One entry of the program for introspection: which kernel runs an op, in
// which pipeline task, and what it costs on the simulated IPU.
struct ProgramStep {
  std::string op;
  std::string location;
  std::string implementation;
  std::string task;
  int64_t ipu = 0;
  uint64_t cycles = 0;
  // Matmuls and convolutions: temporaries of one pass, the passes that
  // availableMemoryProportion forces (1 when it does not bind) and the
  // temporaries the op would need in one pass.
  uint64_t temporaryBytes = 0;
  uint64_t passes = 1;
  uint64_t unboundedTemporaryBytes = 0;
  // The op's kind with its popsim.NameScope names ("encoder/layer_norm").
  std::string name;
};

// One task run of the last call on the host's clock, in seconds from the
// call's start: from when its IPU's thread starts it (waits for copies from
// other IPUs included) to when it ends.
struct TaskWallTime {
  int64_t ipu = 0;
  std::string task;
  int64_t step = 0;
  int64_t microBatch = 0; // in the call; -1 for updates
  double start = 0;
  double end = 0;
};

// A compiled program bound to simulated device memory: the optimised graph
// split into pipeline tasks, its memory plan and report, one kernel per node,
// and the device loop that runs `deviceIterations` iterations per call with
// one host thread per simulated IPU.
class Executable {
public:
  // Assigns stages, builds the training program, optimises a copy of
  // `graph`, orders it by task, inserts inter-IPU copies, plans and checks
  // memory (OutOfMemory errors name the IPU), allocates device memory, loads
  // constants and builds the kernels. Weights start zeroed until written.
  static std::unique_ptr<Executable> compile(const ir::Graph& graph, const CompileOptions& options);
  // The same executable from a program serializeProgram() wrote (executable
  // caching, compileAndExport), without the compile sequence: `options` must
  // be those it was compiled with (the caller checks; the Python API keys
  // its files by them). A damaged file is an InvalidFile error.
  static std::unique_ptr<Executable> load(std::string_view program, const CompileOptions& options);
  // The optimised graph as bytes (ir/serialization.h).
  std::string serializeProgram() const;
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const CompileOptions& options() const { return options_; }
  const ir::Graph& graph() const { return *graph_; }
  const memory::MemoryReport& memoryReport() const { return memoryReport_; }
  const std::vector<ProgramStep>& program() const { return program_; }
  const compiler::TaskLayout& layout() const { return layout_; }
  const memory::MemoryPlan& memoryPlan() const { return plan_; }
  // Storage roots kept off chip, in Streaming Memory.
  bool isOffChip(const ir::Value* root) const { return buffers_.offChip.count(root) != 0; }
  // Cycles of one step (device iteration), in pipeline order.
  const std::vector<PipelineCycle>& schedule() const { return schedule_; }

  // Host types of one call's inputs and outputs (iterations stacked).
  std::vector<ir::TensorType> inputHostTypes() const;
  std::vector<ir::TensorType> outputHostTypes() const;

  // Runs one call. Inputs and outputs must have the host types above; errors
  // name the input and the expected and actual shape or dtype.
  void run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs);

  // Makes this executable replica `index` of `group`: its replica_all_reduce
  // ops meet the other replicas' there, and a failure of its run stops them.
  void joinReplicas(std::shared_ptr<ReplicaGroup> group, int64_t index);

  // Variables by name: weights (parameter paths) and state (accumulators,
  // optimizer state: "<param>/exp_avg", "optimizer/group0/hyper", ...).
  // Writing a state also writes its replicas on other IPUs.
  const std::vector<ir::Value*>& weights() const { return graph_->weights(); }
  const std::vector<ir::Value*>& states() const { return graph_->states(); }
  void writeVariable(const std::string& name, const TensorView& source);
  void readVariable(const std::string& name, const TensorView& destination) const;

  // Simulated IPU cycles of the last call (compute, inter-IPU copies, syncs
  // and host transfers), its timeline, and the compute cycles of one
  // iteration (its micro-batches and update, without host transfers).
  uint64_t lastRunCycles() const { return lastRunCycles_; }
  const std::vector<TimelineEvent>& lastTimeline() const {
    static const std::vector<TimelineEvent> none;
    return ran_ ? simulated_.timeline : none;
  }
  uint64_t computeCyclesPerIteration() const;
  // Each task run of the last call on the host's wall clock, by IPU then in
  // the order the IPU ran them.
  std::vector<TaskWallTime> lastTaskWallTimes() const;

private:
  struct Transfer {
    Channel* channel = nullptr;
    void* address = nullptr;
  };
  // One node's work in a task: a kernel, or receiving an inter-IPU copy.
  struct Step {
    kernels::Kernel* kernel = nullptr;
    Transfer receive;
    const ir::Node* node = nullptr; // named by errors while the kernel runs
  };
  struct TaskProgram {
    std::vector<Transfer> restores; // stashed values, at the start
    std::vector<Step> steps;
    std::vector<Transfer> sends; // values later tasks need, at the end
    std::string name;            // "F0", "B1", ...: the task's name, built once
    std::vector<size_t> streamedInputs;
    std::vector<size_t> producedOutputs;
    // Its costs on the simulated clock. Streaming Memory transfers carry the
    // task's values stashed off chip (these bytes) and the off-chip variables
    // each of its ops reads and writes.
    TaskCycles cycles;
    uint64_t stashInBytes = 0;
    uint64_t stashOutBytes = 0;
  };
  struct CallContext;

  Executable() = default;
  // Checks `options` and makes an executable without a program yet.
  static std::unique_ptr<Executable> withOptions(const CompileOptions& options);
  // Binds a program to memory and kernels (everything after the compile
  // sequence); `how` ("compiled", "loaded") is for the log.
  void bindProgram(compiler::CompiledGraph compiled, const char* how);
  void buildTasks(const std::vector<memory::OpTemporaries>& temporaries);
  void planChannels();
  // Charges each task's Streaming Memory transfers; returns, per node, the
  // off-chip bytes it works on.
  std::vector<uint64_t> planStreaming();

  void simulateClock();
  void runTask(const ScheduledTask& scheduled, int64_t microBatch, dnnl::stream& stream,
               const CallContext& call);
  void runIpu(int64_t ipu, const CallContext& call);
  void runIpus(const CallContext& call);
  // Stops the other replicas after this one failed with `failure`.
  void abortReplicas(const std::exception_ptr& failure);
  const ir::Value& variableNamed(const std::string& name) const;
  int64_t microBatchesPerStep() const;
  int64_t microBatchesPerCall() const {
    return options_.deviceIterations * options_.gradientAccumulation;
  }
  // A scheduled task's micro-batch in the call (-1 for updates).
  int64_t callMicroBatch(const ScheduledTask& scheduled, int64_t step) const {
    return scheduled.microBatch < 0 ? -1 : step * microBatchesPerStep() + scheduled.microBatch;
  }
  // Where a micro-batch's outputs go in the call's output buffers (slot < 0:
  // not returned), and whether they add to what is there (OutputMode.Sum).
  struct OutputCopy {
    int64_t slot = -1;
    bool accumulate = false;
  };
  OutputCopy outputCopyOf(int64_t microBatch, size_t index) const;
  void copyOutput(size_t index, const TensorView& destination, const OutputCopy& copy) const;
  int64_t stepsPerCall() const;

  CompileOptions options_;
  std::unique_ptr<ir::Graph> graph_;
  compiler::TaskLayout layout_;
  memory::MemoryPlan plan_;
  // The layout of the host buffers, when float16 values (in float32
  // carriers) make it differ from the simulated one.
  std::optional<memory::MemoryPlan> hostPlan_;
  memory::MemoryReport memoryReport_;
  std::unique_ptr<DeviceMemory> memory_;
  std::vector<std::unique_ptr<kernels::Kernel>> kernels_; // null for views and copies
  std::vector<TaskProgram> tasks_;
  std::vector<std::unique_ptr<Channel>> channels_;
  // What the runtime adds to the memory plan per IPU (stash, prefetch
  // buffers, temporaries, ...) and the tensors it keeps off chip.
  memory::RuntimeBuffers buffers_;
  // Device addresses of the graph's inputs and outputs, by index.
  std::vector<void*> inputAddresses_;
  std::vector<const void*> outputAddresses_;
  std::vector<PipelineCycle> schedule_;
  std::vector<ProgramStep> program_;
  int64_t threadsPerIpu_ = 0;
  // Bumped whenever an IPU's weights change (host writes, optimizer steps);
  // kernels that keep transformed weights watch their IPU's counter.
  std::vector<uint64_t> weightsVersions_;
  uint64_t lastRunCycles_ = 0;
  bool ran_ = false;
  // Held by a call and by variable reads and writes: one model called from
  // several threads runs one call at a time.
  mutable std::mutex deviceMutex_;
  // One call on the simulated clock (the same for every call).
  SimulatedCall simulated_;
  // Per IPU, the wall times of its task runs in the last call (each IPU's
  // thread writes its own).
  std::vector<std::vector<TaskWallTime>> wallTimes_;
  // Per IPU, the tasks of one step in schedule order.
  std::vector<std::vector<ScheduledTask>> ipuOrders_;
  // The replicas this one trains with (none: it runs alone) and its
  // collectives, which the replica_all_reduce kernels find through the slot.
  std::shared_ptr<ReplicaGroup> replicaGroup_;
  std::unique_ptr<kernels::ReplicaCollectives> collectives_;
  kernels::ReplicaCollectives* collectivesSlot_ = nullptr;
  // The channel each ipu_copy node receives from.
  std::unordered_map<const ir::Node*, Channel*> copyChannels_;
};

} // namespace popsim::runtime
