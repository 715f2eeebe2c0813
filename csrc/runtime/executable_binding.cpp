// Binding a compiled graph to the simulated machine: the compile sequence's
// result gets its memory plan and report, the channels between tasks, one
// kernel per node and its costs, and the replay of a call on the simulated
// clock. (executable.cpp runs calls and moves variables.)

#include "runtime/executable.h"

#include "common/check.h"
#include "common/logging.h"
#include "compiler/compile_graph.h"
#include "costs/cost_model.h"
#include "ir/op_schema.h"
#include "ir/serialization.h"
#include "kernels/kernel_factory.h"
#include "memory/off_chip_placement.h"
#include "memory/stash_plan.h"
#include "memory/streaming_plan.h"
#include "memory/transient_memory.h"
#include "runtime/host_resources.h"
#include "runtime/node_failure.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>

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

std::unique_ptr<Executable> Executable::withOptions(const CompileOptions& options) {
  options.system.validate();
  options.output.validate(options.deviceIterations * options.gradientAccumulation);
  std::unique_ptr<Executable> executable(new Executable());
  executable->options_ = options;
  if (options.mode == ExecutionMode::Sharded) {
    // Sharded execution is the sequential schedule: one task at a time.
    executable->options_.schedule = ScheduleKind::Sequential;
  }
  // The Python API validates what users set (popsim.Options); these hold
  // for every options object it builds.
  POPSIM_ASSERT(options.deviceIterations >= 1 && options.gradientAccumulation >= 1,
                "deviceIterations ", options.deviceIterations, ", gradientAccumulation ",
                options.gradientAccumulation, ".");
  POPSIM_ASSERT(options.prefetchDepth >= 0, "prefetchDepth ", options.prefetchDepth, ".");
  const std::pair<const char*, const memory::TensorLocation*> locations[] = {
      {"setWeightLocation", &options.weightLocation},
      {"setOptimizerLocation", &options.optimizerLocation},
      {"setAccumulatorLocation", &options.accumulatorLocation},
      {"setActivationLocation", &options.activationLocation}};
  for (const auto& [setter, location] : locations) {
    POPSIM_CHECK(options.system.ioTiles > 0 || location->onChip ||
                     !(location->ioTilesToLoad || location->ioTilesToStore),
                 ErrorKind::InvalidOption, "TensorLocations.", setter, ": useIOTilesTo",
                 location->ioTilesToLoad ? "Load" : "Store",
                 "(True) streams the tensors through IO tiles, but none are set aside. Use "
                 "Options.TensorLocations.numIOTiles(n) (32 to 192), or turn it off.");
  }
  for (const auto& [ipu, proportion] : options.availableMemoryProportion) {
    POPSIM_ASSERT(ipu >= 0 && ipu < options.system.numIpus && proportion > 0.0 && proportion <= 1.0,
                  "availableMemoryProportion ", proportion, " for IPU", ipu, " of ",
                  options.system.numIpus, ".");
  }
  return executable;
}

std::unique_ptr<Executable> Executable::compile(const ir::Graph& graph,
                                                const CompileOptions& options) {
  std::unique_ptr<Executable> executable = withOptions(options);
  compiler::CompilerOptions compilerOptions;
  compilerOptions.program = options.program;
  compilerOptions.training = options.training;
  compilerOptions.training.gradientAccumulation = options.gradientAccumulation;
  compilerOptions.stages = options.stages;
  compilerOptions.pipelined = executable->options_.schedule != ScheduleKind::Sequential;
  compilerOptions.recomputation = options.recomputation;
  compilerOptions.deviceIterations = options.deviceIterations;
  compilerOptions.gradientAccumulation = options.gradientAccumulation;
  compilerOptions.numIpus = options.system.numIpus;
  compilerOptions.ioTiles = options.system.ioTiles;
  executable->bindProgram(compiler::compileGraph(graph, compilerOptions), "compiled");
  return executable;
}

std::unique_ptr<Executable> Executable::load(std::string_view program,
                                             const CompileOptions& options) {
  std::unique_ptr<Executable> executable = withOptions(options);
  std::unique_ptr<ir::Graph> graph = ir::deserializeGraph(program);
  // The layout is a function of the nodes' placements, which the file keeps.
  compiler::TaskLayout layout(*graph, options.program != compiler::ProgramKind::Inference);
  POPSIM_CHECK(layout.numIpus() <= options.system.numIpus, ErrorKind::InvalidFile,
               "The compiled program runs on ", layout.numIpus(), " IPUs; the options give ",
               options.system.numIpus, ". Compile the model again.");
  executable->bindProgram({std::move(graph), std::move(layout)}, "loaded");
  return executable;
}

std::string Executable::serializeProgram() const { return ir::serializeGraph(*graph_); }

void Executable::bindProgram(compiler::CompiledGraph compiled, const char* how) {
  const CompileOptions& options = options_;
  graph_ = std::move(compiled.graph);
  layout_ = std::move(compiled.layout);
  const ir::Graph& program = *graph_;
  const compiler::TaskLayout& layout = layout_;

  memory::MemoryPlanOptions planOptions;
  planOptions.numIpus = options.system.numIpus;
  plan_ = memory::planMemory(program, planOptions);
  hostPlan_.reset();
  if (holdsFloat16(program)) {
    planOptions.hostStorage = true;
    hostPlan_ = memory::planMemory(program, planOptions);
  }
  schedule_ = buildSchedule(layout, microBatchesPerStep(), options_.schedule);
  memory_ = std::make_unique<DeviceMemory>(hostPlan_.has_value() ? *hostPlan_ : plan_);
  memory::RuntimeBuffers& buffers = buffers_;
  buffers.offChip =
      memory::offChipVariables(program, plan_, options.weightLocation, options.optimizerLocation,
                               options.accumulatorLocation);
  planChannels();
  buffers.temporaryBudget =
      memory::temporaryBudgets(options.system, options.availableMemoryProportion);
  std::vector<memory::OpTemporaries> temporaries;
  for (const auto& node : program.nodes()) {
    const double own = node->availableMemoryProportion(); // set_available_memory on this op
    temporaries.push_back(memory::planOpTemporaries(
        *node,
        own > 0.0 ? memory::temporaryBudget(options.system, own)
                  : buffers.temporaryBudget[static_cast<size_t>(node->placement().ipu)],
        options.halfPartials));
  }
  const memory::TransientMemory transient = memory::planTransientMemory(
      program, plan_, options.system.numIpus, temporaries, planStreaming());
  buffers.temporaries = transient.temporaries;
  buffers.streamedIn = transient.streamedIn;
  memoryReport_ = memory::buildMemoryReport(program, plan_, options.system, buffers_);
  memory::checkMemoryFits(memoryReport_, options.system);

  const DeviceMemory& memory = *memory_;
  for (const ir::Value* constant : program.constants()) {
    if (constant->type().storageBytes() != 0) {
      std::memcpy(memory.address(constant), constant->constantData().data(),
                  constant->type().storageBytes());
    }
  }
  threadsPerIpu_ =
      options.threadsPerIpu > 0
          ? options.threadsPerIpu
          : (layout.numIpus() > 1 ? std::max<int64_t>(1, omp_get_max_threads() / layout.numIpus())
                                  : 0);
  weightsVersions_.assign(static_cast<size_t>(options.system.numIpus), 0);
  buildTasks(temporaries);
  POPSIM_LOG(Info) << how << " " << program.nodes().size() << " ops in " << layout.numStages()
                   << " stage(s) on " << layout.numIpus() << " IPU(s) for "
                   << options.deviceIterations << " device iteration(s)";
}

// Streaming Memory transfers of each task (one per op and direction, and
// one each way for its off-chip stash); returns, per node, the off-chip
// bytes it works on.
std::vector<uint64_t> Executable::planStreaming() {
  const device::ChipSpec& chip = options_.system.spec();
  const auto cycles = [&](uint64_t bytes) {
    return bytes == 0 ? 0 : costs::streamingMemoryCycles(bytes, chip);
  };
  const memory::IoTileRoutes routes =
      memory::ioTileRoutes(*graph_, plan_, options_.weightLocation, options_.optimizerLocation,
                           options_.accumulatorLocation);
  const std::vector<memory::StreamedBytes> streamed =
      memory::streamedBytesPerNode(*graph_, plan_, buffers_.offChip, routes);
  // Each op streams its own tensors (a transfer each way); per task, the
  // bytes that go through its IO tiles, in and out.
  std::vector<std::pair<uint64_t, uint64_t>> ioTileBytes(tasks_.size(), {0, 0});
  std::vector<uint64_t> workingBytes;
  for (size_t index = 0; index < streamed.size(); ++index) {
    const memory::StreamedBytes& node = streamed[index];
    const size_t task = layout_.taskOf(*graph_->nodes()[index]);
    TaskCycles& costs = tasks_[task].cycles;
    costs.streamInCycles += cycles(node.in - node.ioTileIn);
    costs.streamOutCycles += cycles(node.out - node.ioTileOut);
    costs.ioTileLoadCycles += cycles(node.ioTileIn);
    costs.ioTileStoreCycles += cycles(node.ioTileOut);
    ioTileBytes[task].first += node.ioTileIn;
    ioTileBytes[task].second += node.ioTileOut;
    workingBytes.push_back(node.working);
  }
  const memory::TensorLocation& stash = options_.activationLocation;
  std::vector<uint64_t> mostLoaded(static_cast<size_t>(options_.system.numIpus), 0);
  std::vector<uint64_t> mostStored(mostLoaded.size(), 0);
  for (size_t index = 0; index < tasks_.size(); ++index) {
    TaskProgram& task = tasks_[index];
    TaskCycles& costs = task.cycles;
    auto& [loaded, stored] = ioTileBytes[index];
    (stash.ioTilesToLoad ? costs.ioTileLoadCycles : costs.streamInCycles) +=
        cycles(task.stashInBytes);
    (stash.ioTilesToStore ? costs.ioTileStoreCycles : costs.streamOutCycles) +=
        cycles(task.stashOutBytes);
    loaded += stash.ioTilesToLoad ? task.stashInBytes : 0;
    stored += stash.ioTilesToStore ? task.stashOutBytes : 0;
    if (loaded != 0 || stored != 0) {
      const int64_t ioTiles = options_.system.ioTiles;
      POPSIM_ASSERT(ioTiles > 0, "IO tile transfers without IO tiles.");
      costs.ioTileLoadCopyCycles = loaded != 0 ? costs::ioTileCopyCycles(loaded, ioTiles, chip) : 0;
      costs.ioTileStoreCopyCycles =
          stored != 0 ? costs::ioTileCopyCycles(stored, ioTiles, chip) : 0;
    }
    // The IO tiles hold two buffers of the most any task loads, and of the
    // most it stores.
    const auto ipu = static_cast<size_t>(layout_.tasks()[index].ipu);
    mostLoaded[ipu] = std::max(mostLoaded[ipu], loaded);
    mostStored[ipu] = std::max(mostStored[ipu], stored);
  }
  for (size_t ipu = 0; ipu < mostLoaded.size(); ++ipu) {
    buffers_.ioTiles[ipu] += clock::kIoTileBuffers * (mostLoaded[ipu] + mostStored[ipu]);
  }
  return workingBytes;
}

// Values that cross from one task to another: inter-IPU copies, and values
// a later task on the same IPU reads after other tasks have run in between
// (the stash). A value read by the very next task of its IPU stays in place.
void Executable::planChannels() {
  const ir::Graph& program = *graph_;
  const size_t numTasks = layout_.tasks().size();
  tasks_.assign(numTasks, {});
  for (size_t task = 0; task < numTasks; ++task) {
    tasks_[task].name = layout_.tasks()[task].name();
  }
  for (const ir::Value* input : program.inputs()) {
    inputAddresses_.push_back(memory_->address(input));
  }
  for (const ir::Value* output : program.outputs()) {
    outputAddresses_.push_back(memory_->address(output));
  }

  // The task that writes each storage root: its producer's, or for inputs
  // the task that streams them (their first user's on their home IPU).
  std::map<const ir::Value*, size_t> writer;
  for (const auto& node : program.nodes()) {
    for (const ir::Value* output : node->outputs()) {
      const ir::Value* root = plan_.storageRoot(output);
      if (root == output) writer[root] = layout_.taskOf(*node);
    }
  }
  std::vector<uint64_t> inputBytes; // of the inputs streamed through compute tiles
  std::vector<int64_t> inputIpus;
  std::vector<uint64_t> ioTileBytes(static_cast<size_t>(options_.system.numIpus), 0);
  for (size_t i = 0; i < program.inputs().size(); ++i) {
    const ir::Value* input = program.inputs()[i];
    size_t task = 0;
    bool found = false;
    for (const ir::Node* user : input->users()) {
      if (user->kind() == ir::OpKind::IpuCopy) continue;
      const size_t candidate = layout_.taskOf(*user);
      task = found ? std::min(task, candidate) : candidate;
      found = true;
    }
    writer[input] = task;
    tasks_[task].streamedInputs.push_back(i);
    const int64_t ipu = layout_.tasks()[task].ipu;
    if (program.inputOverlap(i) != ir::HostOverlap::None) {
      ioTileBytes[static_cast<size_t>(ipu)] += clock::kIoTileBuffers * input->type().bytes();
      continue; // prefetched into the IO tiles' buffers instead
    }
    inputBytes.push_back(input->type().bytes());
    inputIpus.push_back(ipu);
  }
  buffers_.prefetch =
      memory::prefetchBytes(inputBytes, inputIpus, options_.prefetchDepth, options_.system.numIpus);
  for (size_t i = 0; i < program.outputs().size(); ++i) {
    auto it = writer.find(plan_.storageRoot(program.outputs()[i]));
    const size_t task = it != writer.end() ? it->second : 0;
    tasks_[task].producedOutputs.push_back(i);
    if (program.outputOverlap(i) != ir::HostOverlap::None) {
      ioTileBytes[static_cast<size_t>(layout_.tasks()[task].ipu)] +=
          clock::kIoTileBuffers * program.outputs()[i]->type().bytes();
    }
  }
  buffers_.ioTiles = std::move(ioTileBytes);

  // Where each task instance runs in its IPU's order for one step.
  std::map<std::pair<size_t, int64_t>, size_t> position;
  ipuOrders_.assign(static_cast<size_t>(layout_.numIpus()), {});
  for (const PipelineCycle& cycle : schedule_) {
    for (const ScheduledTask& scheduled : cycle) {
      auto& order = ipuOrders_[static_cast<size_t>(layout_.tasks()[scheduled.task].ipu)];
      position[{scheduled.task, scheduled.microBatch}] = order.size();
      order.push_back(scheduled);
    }
  }
  const int64_t microBatches = microBatchesPerStep();
  auto stashed = [&](size_t from, size_t to) {
    if (!layout_.tasks()[from].perMicroBatch()) { // a gradient norm read by its IPU's update
      return position.at({to, -1}) != position.at({from, -1}) + 1;
    }
    for (int64_t m = 0; m < microBatches; ++m) {
      const int64_t consumer = layout_.tasks()[to].perMicroBatch() ? m : -1;
      if (position.at({to, consumer}) != position.at({from, m}) + 1) return true;
    }
    return false;
  };

  std::map<std::pair<const ir::Value*, size_t>, Channel*> stashes;
  std::vector<memory::StashedValue> stashedValues;
  for (const auto& node : program.nodes()) {
    const size_t task = layout_.taskOf(*node);
    for (const ir::Value* input : node->inputs()) {
      const ir::Value* root = plan_.storageRoot(input);
      auto written = writer.find(root);
      if (written == writer.end() || written->second == task) continue;
      const size_t from = written->second;
      if (node->kind() == ir::OpKind::IpuCopy) {
        // Received where the copy node runs (buildTasks).
        channels_.push_back(std::make_unique<Channel>(root->type().storageBytes()));
        copyChannels_[node.get()] = channels_.back().get();
        tasks_[from].sends.push_back({channels_.back().get(), memory_->address(root)});
        continue;
      }
      POPSIM_ASSERT(layout_.tasks()[task].perMicroBatch() ||
                        !layout_.tasks()[from].perMicroBatch() || microBatches == 1,
                    node->describe(), " reads a per-micro-batch value in a per-step task.");
      if (!stashed(from, task) || stashes.count({root, task}) != 0) continue;
      channels_.push_back(std::make_unique<Channel>(root->type().storageBytes()));
      Channel* channel = channels_.back().get();
      stashes[{root, task}] = channel;
      void* address = memory_->address(root);
      tasks_[from].sends.push_back({channel, address});
      tasks_[task].restores.push_back({channel, address});
      const uint64_t bytes = root->type().bytes();
      const bool offChip = memory::placedOffChip(*root, options_.activationLocation);
      if (offChip) {
        // Streamed out after the producing task, back in before the reader.
        tasks_[from].stashOutBytes += bytes;
        tasks_[task].stashInBytes += bytes;
      }
      stashedValues.push_back({bytes, from, task, layout_.tasks()[task].ipu, offChip});
    }
  }
  std::vector<std::vector<size_t>> taskOrders;
  for (const std::vector<ScheduledTask>& order : ipuOrders_) {
    taskOrders.emplace_back();
    for (const ScheduledTask& scheduled : order) {
      taskOrders.back().push_back(scheduled.task);
    }
  }
  memory::StashBytes stash = memory::planStash(stashedValues, taskOrders, options_.system.numIpus);
  buffers_.stash = std::move(stash.onChip);
  buffers_.stashOffChip = std::move(stash.offChip);
}

void Executable::buildTasks(const std::vector<memory::OpTemporaries>& temporaries) {
  const ir::Graph& program = *graph_;
  const device::ChipSpec& chip = options_.system.spec();
  const DeviceMemory& memory = *memory_;
  ThreadCountScope threads(threadsPerIpu_);
  for (size_t index = 0; index < program.nodes().size(); ++index) {
    const auto& node = program.nodes()[index];
    const size_t task = layout_.taskOf(*node);
    const int64_t ipu = node->placement().ipu;
    kernels::KernelRequest request{*node,
                                   {},
                                   {},
                                   cpuEngine(),
                                   &weightsVersions_[static_cast<size_t>(ipu)],
                                   options_.program != ProgramKind::Inference,
                                   &collectivesSlot_};
    request.floatingPointExceptions = options_.floatingPointExceptions;
    request.halfPartials = options_.halfPartials;
    if (options_.stochasticRounding) {
      request.stochasticRoundingKey = options_.stochasticRoundingSeed * 0x100000001b3ull + index;
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
      rethrowFailureOf(*node, strCat("building its kernel for IPU", ipu));
    }
    const memory::OpTemporaries& opTemporaries = temporaries[index];
    const uint64_t cycles = costs::estimateOpCost(*node, chip, opTemporaries).total();
    std::string implementation = kernel ? kernel->implementation() : "view";
    TaskProgram& taskProgram = tasks_[task];
    taskProgram.cycles.computeCycles += cycles;
    if (node->kind() == ir::OpKind::IpuCopy) {
      implementation = "ipu-link";
      taskProgram.cycles.copyCycles += cycles;
      const int64_t source = plan_.slot(node->input(0)).ipu;
      auto& sources = taskProgram.cycles.copySources;
      if (std::find(sources.begin(), sources.end(), source) == sources.end()) {
        sources.insert(std::upper_bound(sources.begin(), sources.end(), source), source);
      }
      taskProgram.steps.push_back(
          {nullptr, {copyChannels_.at(node.get()), memory.address(node->output())}, node.get()});
    } else if (kernel) {
      taskProgram.steps.push_back({kernel.get(), {}, node.get()});
    }
    program_.push_back({std::string(node->name()), node->location().str(), implementation,
                        taskProgram.name, ipu, cycles, opTemporaries.bytes, opTemporaries.passes,
                        opTemporaries.unboundedBytes, node->scopedName()});
    kernels_.push_back(std::move(kernel));
  }
  for (TaskProgram& taskProgram : tasks_) {
    TaskCycles& cycles = taskProgram.cycles;
    for (size_t i : taskProgram.streamedInputs) {
      const uint64_t bytes = program.inputs()[i]->type().bytes();
      const ir::HostOverlap overlap = program.inputOverlap(i);
      cycles.inputLatencyCycles += costs::hostLatencyCycles(chip);
      if (overlap == ir::HostOverlap::None) {
        cycles.inputDataCycles += costs::hostDataCycles(bytes, chip);
        continue;
      }
      cycles.overlappedInputCycles += costs::hostDataCycles(bytes, chip);
      cycles.ioTileInputCycles += costs::ioTileCopyCycles(bytes, options_.system.ioTiles, chip);
      cycles.overlapAcrossSteps &= overlap == ir::HostOverlap::DeviceIterationLoop;
    }
  }
  simulateClock();
}

// Every call runs the same schedule, so one call is replayed on the simulated
// clock at compile time: its timeline and cycles.
void Executable::simulateClock() {
  const device::ChipSpec& chip = options_.system.spec();
  std::vector<TaskCycles> costs;
  for (TaskProgram& task : tasks_) {
    task.cycles.streamsInputs = task.cycles.inputLatencyCycles != 0 && !options_.syntheticData;
    task.cycles.streamsOverlappedInputs =
        task.cycles.overlappedInputCycles != 0 && !options_.syntheticData;
    costs.push_back(task.cycles);
  }
  clock::ClockSetup setup;
  setup.layout = &layout_;
  setup.tasks = &costs;
  setup.schedule = &schedule_;
  setup.steps = stepsPerCall();
  setup.microBatchesPerStep = microBatchesPerStep();
  setup.prefetchDepth = options_.prefetchDepth;
  setup.syncCycles = layout_.numIpus() > 1 ? costs::syncCycles(layout_.numIpus(), chip) : 0;
  setup.hostOutputs = [&](size_t task, int64_t microBatch) {
    std::vector<clock::HostOutputCost> transfers;
    if (options_.syntheticData) return transfers; // outputs stay on the device
    for (size_t i : tasks_[task].producedOutputs) {
      // Summed outputs stay on the device until the call's end.
      const OutputCopy copy = outputCopyOf(microBatch, i);
      if (copy.slot < 0 || copy.accumulate) continue;
      const uint64_t bytes = graph_->outputs()[i]->type().bytes();
      clock::HostOutputCost cost;
      cost.cycles = costs::hostTransferCycles(bytes, chip);
      const ir::HostOverlap overlap = graph_->outputOverlap(i);
      if (overlap != ir::HostOverlap::None) {
        cost.ioTiles = true;
        cost.ioTileCycles = costs::ioTileCopyCycles(bytes, options_.system.ioTiles, chip);
        cost.acrossSteps = overlap == ir::HostOverlap::DeviceIterationLoop;
      }
      transfers.push_back(cost);
    }
    return transfers;
  };
  simulated_ = clock::simulateCall(setup);
}

// An inference step runs all the call's iterations.
uint64_t Executable::computeCyclesPerIteration() const {
  return options_.program == ProgramKind::Inference
             ? simulated_.computeCyclesOfFirstStep /
                   static_cast<uint64_t>(options_.deviceIterations)
             : simulated_.computeCyclesOfFirstStep;
}

} // namespace popsim::runtime
