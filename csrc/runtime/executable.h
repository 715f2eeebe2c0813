#pragma once

#include "device/ipu_system.h"
#include "device/memory_report.h"
#include "ir/graph.h"
#include "kernels/kernel.h"
#include "passes/memory_plan.h"
#include "passes/training_program.h"
#include "runtime/device_memory.h"
#include "runtime/output_spec.h"
#include "runtime/tensor_view.h"

#include <memory>
#include <string>
#include <vector>

namespace popsim::runtime {

// What to build from the imported graph.
enum class ProgramKind {
  Inference, // the graph as it is
  Training,  // forward, backward and optimizer step (needs a loss and `training`)
  Gradients, // outputs are the loss's gradients (for tests and debugging)
};

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
  passes::TrainingConfig training;
};

// One entry of the program for introspection: which kernel runs an op and
// what it costs on the simulated IPU.
struct ProgramStep {
  std::string op;
  std::string location;
  std::string implementation;
  int64_t ipu = 0;
  uint64_t cycles = 0;
};

// A compiled program bound to simulated device memory: the optimised graph,
// its memory plan and report, one kernel per node, and the device loop that
// runs `deviceIterations` iterations per call.
class Executable {
public:
  // Optimises a copy of `graph`, plans and checks memory (OutOfMemory errors
  // name the IPU), allocates device memory, loads constants and builds the
  // kernels. Weights start zeroed until written.
  static std::unique_ptr<Executable> compile(const ir::Graph& graph, const CompileOptions& options);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const CompileOptions& options() const { return options_; }
  const ir::Graph& graph() const { return *graph_; }
  const device::MemoryReport& memoryReport() const { return memoryReport_; }
  const std::vector<ProgramStep>& program() const { return program_; }

  // Host types of one call's inputs and outputs (iterations stacked).
  std::vector<ir::TensorType> inputHostTypes() const;
  std::vector<ir::TensorType> outputHostTypes() const;

  // Runs one call. Inputs and outputs must have the host types above; errors
  // name the input and the expected and actual shape or dtype.
  void run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs);

  // Variables by name: weights (parameter paths) and state (accumulators,
  // optimizer state: "<param>/exp_avg", "optimizer/group0/hyper", ...).
  const std::vector<ir::Value*>& weights() const { return graph_->weights(); }
  const std::vector<ir::Value*>& states() const { return graph_->states(); }
  void writeVariable(const std::string& name, const TensorView& source);
  void readVariable(const std::string& name, const TensorView& destination) const;

  // Simulated IPU cycles of the last call (compute and host transfers) and
  // the compute cycles of one iteration (its micro-batches and update).
  uint64_t lastRunCycles() const { return lastRunCycles_; }
  uint64_t computeCyclesPerIteration() const { return computeCyclesPerIteration_; }

private:
  Executable() = default;
  const ir::Value& variableNamed(const std::string& name) const;
  void runSegment(const std::vector<kernels::Kernel*>& segment);
  void copyOutput(size_t index, const TensorView& destination, int64_t slot, bool accumulate) const;

  CompileOptions options_;
  std::unique_ptr<ir::Graph> graph_;
  passes::MemoryPlan plan_;
  device::MemoryReport memoryReport_;
  std::unique_ptr<DeviceMemory> memory_;
  std::vector<std::unique_ptr<kernels::Kernel>> kernels_; // null for views
  // Kernels of the forward and backward phases (run per micro-batch) and of
  // the update phase (run per step), in schedule order.
  std::vector<kernels::Kernel*> microBatchSegment_;
  std::vector<kernels::Kernel*> updateSegment_;
  std::vector<ProgramStep> program_;
  dnnl::stream stream_;
  // Bumped whenever weights change (host writes, optimizer steps); kernels
  // that keep transformed weights watch it.
  uint64_t weightsVersion_ = 0;
  uint64_t microBatchCycles_ = 0;
  uint64_t updateCycles_ = 0;
  uint64_t computeCyclesPerIteration_ = 0;
  uint64_t lastRunCycles_ = 0;
};

} // namespace popsim::runtime
