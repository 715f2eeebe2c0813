#pragma once

#include "kernels/kernel.h"
#include "runtime/channel.h"
#include "runtime/compile_options.h"
#include "runtime/device_memory.h"
#include "runtime/replica_group.h"
#include "runtime/simulation.h"
#include "runtime/tensor_view.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace popsim::runtime {

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
  // Where its cycles go (they add up to `cycles`): the superstep's sync, the
  // exchange between tiles (and the transfer of a collective or a link copy),
  // and the tiles' compute; whether it is a collective across replicas and a
  // forward op recomputed in the backward pass. The sizing report's time
  // breakdown sums these.
  uint64_t syncCycles = 0;
  uint64_t exchangeCycles = 0;
  uint64_t computeCycles = 0;
  bool collective = false;
  bool recomputed = false;
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

// A simulated program bound to the host: device memory laid out by its plan,
// one kernel per node, the channels between its tasks, and the device loop
// that runs `deviceIterations` iterations per call with one host thread per
// simulated IPU.
class Executable {
public:
  // The stages of runtime/simulation.h, then the binding: device memory
  // (weights start zeroed until written), constants, channels and kernels.
  static std::unique_ptr<Executable> compile(const ir::Graph& graph, const CompileOptions& options);
  // The same from a program serializeProgram() wrote, without the compiler.
  static std::unique_ptr<Executable> load(std::string_view program, const CompileOptions& options);
  // The optimised graph as bytes (ir/serialization.h).
  std::string serializeProgram() const;
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const Simulation& simulation() const { return simulation_; }
  // Whether the program was compiled cost-only (KernelOptions::costOnly):
  // calls replay the clock, writes are checked and dropped, reads refused.
  bool costOnly() const { return simulation_.options.kernels.costOnly; }
  const CompileOptions& options() const { return simulation_.options; }
  const compiler::Program& compiled() const { return simulation_.program; }
  const ir::Graph& graph() const { return *simulation_.program.graph; }
  const compiler::TaskLayout& layout() const { return simulation_.program.layout; }
  const memory::MemoryReport& memoryReport() const { return simulation_.memory.report; }
  const memory::MemoryPlan& memoryPlan() const { return simulation_.memory.plan; }
  // Storage roots kept off chip, in Streaming Memory.
  bool isOffChip(const ir::Value* root) const { return simulation_.memory.isOffChip(root); }
  // Cycles of one step (device iteration), in pipeline order.
  const std::vector<compiler::PipelineCycle>& schedule() const {
    return simulation_.program.schedule;
  }
  const std::vector<ProgramStep>& program() const { return program_; }

  // Host types of one call's inputs and outputs (iterations stacked).
  std::vector<ir::TensorType> inputHostTypes() const { return compiled().inputHostTypes(); }
  std::vector<ir::TensorType> outputHostTypes() const { return compiled().outputHostTypes(); }

  // Runs one call. Inputs and outputs must have the host types above; errors
  // name the input and the expected and actual shape or dtype.
  void run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs);

  // Makes this executable replica `index` of `group`: its replica_all_reduce
  // ops meet the other replicas' there, and a failure of its run stops them.
  void joinReplicas(std::shared_ptr<ReplicaGroup> group, int64_t index);

  // Variables by name: weights (parameter paths) and state (accumulators,
  // optimizer state: "<param>/exp_avg", "optimizer/group0/hyper", ...).
  // Writing a state also writes its replicas on other IPUs.
  const std::vector<ir::Value*>& weights() const { return graph().weights(); }
  const std::vector<ir::Value*>& states() const { return graph().states(); }
  void writeVariable(const std::string& name, const TensorView& source);
  void readVariable(const std::string& name, const TensorView& destination) const;

  // Simulated IPU cycles of the last call (compute, inter-IPU copies, syncs
  // and host transfers), its timeline, and the compute cycles of one
  // iteration (its micro-batches and update, without host transfers).
  uint64_t lastRunCycles() const { return lastRunCycles_; }
  const std::vector<clock::TimelineEvent>& lastTimeline() const {
    static const std::vector<clock::TimelineEvent> none;
    return ran_ ? simulation_.call.timeline : none;
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
  };
  struct CallContext;

  explicit Executable(Simulation simulation);
  // Binds the simulation to the host: device memory and its constants, the
  // channels between tasks, one kernel per node; `how` ("compiled",
  // "loaded") is for the log.
  void bind(const char* how);
  void bindChannels();
  void bindKernels();
  // The program listing's entry for node `index`, run by `implementation`.
  ProgramStep stepOf(size_t index, std::string implementation) const;

  void runTask(const compiler::ScheduledTask& scheduled, int64_t microBatch, dnnl::stream& stream,
               const CallContext& call);
  void runIpu(int64_t ipu, const CallContext& call);
  void runIpus(const CallContext& call);
  // Stops the other replicas after this one failed with `failure`.
  void abortReplicas(const std::exception_ptr& failure);
  const ir::Value& variableNamed(const std::string& name) const;
  void copyOutput(size_t index, const TensorView& destination,
                  const compiler::OutputCopy& copy) const;

  Simulation simulation_;
  // The layout of the host buffers, when float16 values (in float32
  // carriers) make it differ from the simulated one.
  std::optional<memory::MemoryPlan> hostPlan_;
  std::unique_ptr<DeviceMemory> memory_;
  std::vector<std::unique_ptr<kernels::Kernel>> kernels_; // null for views and copies
  std::vector<TaskProgram> tasks_;
  std::vector<std::unique_ptr<Channel>> channels_;
  // Device addresses of the graph's inputs and outputs, by index.
  std::vector<void*> inputAddresses_;
  std::vector<const void*> outputAddresses_;
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
  // Per IPU, the wall times of its task runs in the last call (each IPU's
  // thread writes its own).
  std::vector<std::vector<TaskWallTime>> wallTimes_;
  // Per IPU, the tasks of one step in schedule order.
  std::vector<std::vector<compiler::ScheduledTask>> ipuOrders_;
  // The replicas this one trains with (none: it runs alone) and its
  // collectives, which the replica_all_reduce kernels find through the slot.
  std::shared_ptr<ReplicaGroup> replicaGroup_;
  std::unique_ptr<kernels::ReplicaCollectives> collectives_;
  kernels::ReplicaCollectives* collectivesSlot_ = nullptr;
  // The channel each ipu_copy node receives from.
  std::unordered_map<const ir::Node*, Channel*> copyChannels_;
};

} // namespace popsim::runtime
