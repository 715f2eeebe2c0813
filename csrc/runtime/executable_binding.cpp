// Binding a simulated program to the host: device memory laid out by its
// plan (with its constants), the channels that carry the values its plan
// says cross between tasks, and one kernel per node. (executable.cpp runs
// calls and moves variables.)

#include "runtime/executable.h"

#include "common/check.h"
#include "common/logging.h"
#include "ir/op_schema.h"
#include "ir/op_work.h"
#include "ir/serialization.h"
#include "kernels/kernel_factory.h"
#include "runtime/host_resources.h"
#include "runtime/node_failure.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace popsim::runtime {
namespace {

// Whether any value of the program is float16 (stored in a float32 carrier).
bool holdsFloat16(const ir::Graph& program) {
  const auto half = [](const ir::Value* value) {
    return value->type().dtype == ir::DType::Float16;
  };
  for (const auto* leaves :
       {&program.inputs(), &program.weights(), &program.states(), &program.constants()}) {
    if (std::any_of(leaves->begin(), leaves->end(), half)) return true;
  }
  for (const auto& node : program.nodes()) {
    if (std::any_of(node->outputs().begin(), node->outputs().end(), half)) return true;
  }
  return false;
}

} // namespace

Executable::Executable(Simulation simulation) : simulation_(std::move(simulation)) {}

std::unique_ptr<Executable> Executable::compile(const ir::Graph& graph,
                                                const CompileOptions& options) {
  std::unique_ptr<Executable> executable(new Executable(simulate(graph, options)));
  executable->bind("compiled");
  return executable;
}

std::unique_ptr<Executable> Executable::load(std::string_view program,
                                             const CompileOptions& options) {
  std::unique_ptr<Executable> executable(new Executable(simulateSerialized(program, options)));
  executable->bind("loaded");
  return executable;
}

std::string Executable::serializeProgram() const { return ir::serializeGraph(graph()); }

void Executable::bind(const char* how) {
  const ir::Graph& program = graph();
  const CompileOptions& options = simulation_.options;
  ipuOrders_ = compiled().ipuOrders();
  if (options.kernels.costOnly) {
    // Nothing to bind: the listing names no kernel.
    for (size_t index = 0; index < program.nodes().size(); ++index) {
      const ir::Node& node = *program.nodes()[index];
      program_.push_back(stepOf(index, node.kind() == ir::OpKind::IpuCopy ? "ipu-link"
                                       : ir::isViewOp(node.kind())        ? "view"
                                                                          : "none (cost-only)"));
    }
    POPSIM_LOG(Info) << how << " " << program.nodes().size() << " ops cost-only in "
                     << layout().numStages() << " stage(s) on " << layout().numIpus() << " IPU(s)";
    return;
  }
  hostPlan_.reset();
  if (holdsFloat16(program)) {
    memory::MemoryPlanOptions planOptions;
    planOptions.numIpus = options.system.numIpus;
    planOptions.hostStorage = true;
    hostPlan_ = memory::planMemory(program, planOptions);
  }
  memory_ = std::make_unique<DeviceMemory>(hostPlan_.has_value() ? *hostPlan_ : memoryPlan());
  for (const ir::Value* constant : program.constants()) {
    if (constant->type().storageBytes() != 0) {
      std::memcpy(memory_->address(constant), constant->constantData().data(),
                  constant->type().storageBytes());
    }
  }
  for (const ir::Value* input : program.inputs()) {
    inputAddresses_.push_back(memory_->address(input));
  }
  for (const ir::Value* output : program.outputs()) {
    outputAddresses_.push_back(memory_->address(output));
  }
  threadsPerIpu_ = options.kernels.threadsPerIpu > 0
                       ? options.kernels.threadsPerIpu
                       : (layout().numIpus() > 1
                              ? std::max<int64_t>(1, omp_get_max_threads() / layout().numIpus())
                              : 0);
  weightsVersions_.assign(static_cast<size_t>(options.system.numIpus), 0);
  bindChannels();
  bindKernels();
  POPSIM_LOG(Info) << how << " " << program.nodes().size() << " ops in " << layout().numStages()
                   << " stage(s) on " << layout().numIpus() << " IPU(s) for "
                   << options.compiler.deviceIterations << " device iteration(s)";
}

// A channel per value the plan says crosses tasks: an inter-IPU copy is sent
// at the end of its writer's task and received where its ipu_copy node runs;
// a stashed value is sent at the end of its writer's task and restored at
// the start of its reader's.
void Executable::bindChannels() {
  tasks_.assign(layout().tasks().size(), {});
  for (size_t task = 0; task < tasks_.size(); ++task) {
    tasks_[task].name = layout().tasks()[task].name();
  }
  // With float16 values the host has its own plan, which keeps the float32
  // copies that the simulated IPU's plan folds into their float16 sources
  // (ir::isFreeOnIpu): the buffers sent and restored are the host plan's.
  const memory::TaskTransfers hostTransfers =
      hostPlan_.has_value() ? memory::planTaskTransfers(compiled(), *hostPlan_,
                                                        simulation_.memory.options.activations)
                            : memory::TaskTransfers{};
  for (const memory::TaskTransfer& transfer :
       hostPlan_.has_value() ? hostTransfers.transfers : simulation_.memory.transfers.transfers) {
    channels_.push_back(std::make_unique<Channel>(transfer.value->type().storageBytes()));
    Channel* channel = channels_.back().get();
    void* address = memory_->address(transfer.value);
    tasks_[transfer.from].sends.push_back({channel, address});
    if (transfer.copy != nullptr) {
      copyChannels_[transfer.copy] = channel; // received where the copy node runs
    } else {
      tasks_[transfer.to].restores.push_back({channel, address});
    }
  }
}

void Executable::bindKernels() {
  const ir::Graph& program = graph();
  const CompileOptions& options = simulation_.options;
  const DeviceMemory& memory = *memory_;
  ThreadCountScope threads(threadsPerIpu_);
  for (size_t index = 0; index < program.nodes().size(); ++index) {
    const auto& node = program.nodes()[index];
    const size_t task = layout().taskOf(*node);
    const int64_t ipu = node->placement().ipu;
    kernels::KernelRequest request{*node,
                                   {},
                                   {},
                                   cpuEngine(),
                                   &weightsVersions_[static_cast<size_t>(ipu)],
                                   compiled().training(),
                                   &collectivesSlot_};
    request.floatingPointExceptions = options.kernels.floatingPointExceptions;
    request.halfPartials = options.memory.halfPartials;
    if (options.kernels.stochasticRounding) {
      request.stochasticRoundingKey =
          options.kernels.stochasticRoundingSeed * 0x100000001b3ull + index;
    }
    for (const ir::Value* input : node->inputs()) {
      request.inputs.push_back({memory.address(input), input->type()});
    }
    for (const ir::Value* output : node->outputs()) {
      request.outputs.push_back({memory.address(output), output->type()});
    }
    std::unique_ptr<kernels::Kernel> kernel;
    try {
      kernel = kernels::createKernel(request);
    } catch (...) {
      FailureWhen when;
      when.doing = strCat("building its kernel for IPU", ipu);
      when.ipu = ipu;
      rethrowFailureOf(*node, when);
    }
    std::string implementation = kernel ? kernel->implementation() : "view";
    TaskProgram& taskProgram = tasks_[task];
    if (node->kind() == ir::OpKind::IpuCopy) {
      implementation = "ipu-link";
      taskProgram.steps.push_back(
          {nullptr, {copyChannels_.at(node.get()), memory.address(node->output())}, node.get()});
    } else if (kernel) {
      taskProgram.steps.push_back({kernel.get(), {}, node.get()});
    }
    program_.push_back(stepOf(index, implementation));
    kernels_.push_back(std::move(kernel));
  }
}

ProgramStep Executable::stepOf(size_t index, std::string implementation) const {
  const ir::Node& node = *graph().nodes()[index];
  const memory::OpTemporaries& temporaries = simulation_.memory.temporaries[index];
  const costs::OpCost& cost = simulation_.costs.ops[index];
  ProgramStep step{std::string(node.name()),   node.location().str(),
                   std::move(implementation),  layout().tasks()[layout().taskOf(node)].name(),
                   node.placement().ipu,       cost.total(),
                   temporaries.bytes,          temporaries.passes,
                   temporaries.unboundedBytes, node.scopedName()};
  step.syncCycles = cost.syncCycles;
  step.exchangeCycles = cost.exchangeCycles;
  step.computeCycles = cost.computeCycles;
  step.collective = ir::opWork(node).collective != ir::OpWork::Collective::None;
  step.recomputed = node.placement().recomputed;
  return step;
}

// An inference step runs all the call's iterations.
uint64_t Executable::computeCyclesPerIteration() const {
  return compiled().training() ? simulation_.call.computeCyclesOfFirstStep
                               : simulation_.call.computeCyclesOfFirstStep /
                                     static_cast<uint64_t>(options().compiler.deviceIterations);
}

} // namespace popsim::runtime
