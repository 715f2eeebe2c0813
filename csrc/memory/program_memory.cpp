#include "memory/program_memory.h"

#include "common/check.h"
#include "memory/off_chip_placement.h"
#include "memory/stash_plan.h"
#include "memory/transient_memory.h"

#include <algorithm>

namespace popsim::memory {
namespace {

// Step 2: the stash of each IPU from the stashed values and the IPUs' task
// orders; the extra input buffers prefetching needs; the IO tiles' buffers
// of inputs and outputs that overlap the compute.
void planTransferBuffers(const compiler::Program& program, const TaskTransfers& transfers,
                         const MemoryOptions& options, const device::IpuSystemConfig& system,
                         RuntimeBuffers& buffers) {
  const ir::Graph& graph = *program.graph;
  const compiler::TaskLayout& layout = program.layout;
  std::vector<uint64_t> inputBytes; // of the inputs streamed through compute tiles
  std::vector<int64_t> inputIpus;
  std::vector<uint64_t> ioTileBytes(static_cast<size_t>(system.numIpus), 0);
  for (size_t task = 0; task < transfers.tasks.size(); ++task) {
    const auto ipu = static_cast<size_t>(layout.tasks()[task].ipu);
    for (size_t i : transfers.tasks[task].streamedInputs) {
      // The host's buffers hold the input as it streams (8-bit images as
      // bytes); the device's own copy, its value's slot, has its type.
      const uint64_t bytes = graph.inputStreamedBytes(i);
      if (graph.inputOverlap(i) != ir::HostOverlap::None) {
        ioTileBytes[ipu] += device::kIoTileBuffers * bytes; // prefetched into the IO tiles
        continue;
      }
      inputBytes.push_back(bytes);
      inputIpus.push_back(layout.tasks()[task].ipu);
    }
    for (size_t i : transfers.tasks[task].producedOutputs) {
      if (graph.outputOverlap(i) != ir::HostOverlap::None) {
        ioTileBytes[ipu] += device::kIoTileBuffers * graph.outputs()[i]->type().bytes();
      }
    }
  }
  buffers.prefetch = prefetchBytes(inputBytes, inputIpus, options.prefetchDepth, system.numIpus);
  buffers.ioTiles = std::move(ioTileBytes);

  std::vector<StashedValue> stashed;
  for (const TaskTransfer& transfer : transfers.transfers) {
    if (transfer.copy != nullptr) continue;
    stashed.push_back({simulatedBytes(*transfer.value), transfer.from, transfer.to,
                       layout.tasks()[transfer.to].ipu, transfer.offChip});
  }
  std::vector<std::vector<size_t>> taskOrders;
  for (const std::vector<compiler::ScheduledTask>& ipuOrder : program.ipuOrders()) {
    taskOrders.emplace_back();
    for (const compiler::ScheduledTask& scheduled : ipuOrder) {
      taskOrders.back().push_back(scheduled.task);
    }
  }
  StashBytes stash = planStash(stashed, taskOrders, system.numIpus);
  buffers.stash = std::move(stash.onChip);
  buffers.stashOffChip = std::move(stash.offChip);
}

// Step 3: per task, the off-chip bytes it loads and stores through the IO
// tiles (its ops' and its stash's); the IO tiles hold two buffers of the most
// any task of the IPU loads, and of the most it stores.
void planIoTileStreaming(const compiler::Program& program,
                         const std::vector<StreamedBytes>& streamed, const MemoryOptions& options,
                         const device::IpuSystemConfig& system, TaskTransfers& transfers,
                         RuntimeBuffers& buffers) {
  const compiler::TaskLayout& layout = program.layout;
  for (size_t index = 0; index < streamed.size(); ++index) {
    TaskIo& task = transfers.tasks[layout.taskOf(*program.graph->nodes()[index])];
    task.ioTileLoadBytes += streamed[index].ioTileIn;
    task.ioTileStoreBytes += streamed[index].ioTileOut;
  }
  std::vector<uint64_t> mostLoaded(static_cast<size_t>(system.numIpus), 0);
  std::vector<uint64_t> mostStored(mostLoaded.size(), 0);
  for (size_t index = 0; index < transfers.tasks.size(); ++index) {
    TaskIo& task = transfers.tasks[index];
    task.ioTileLoadBytes += options.activations.ioTilesToLoad ? task.stashInBytes : 0;
    task.ioTileStoreBytes += options.activations.ioTilesToStore ? task.stashOutBytes : 0;
    POPSIM_ASSERT(system.ioTiles > 0 || (task.ioTileLoadBytes == 0 && task.ioTileStoreBytes == 0),
                  "IO tile transfers without IO tiles.");
    const auto ipu = static_cast<size_t>(layout.tasks()[index].ipu);
    mostLoaded[ipu] = std::max(mostLoaded[ipu], task.ioTileLoadBytes);
    mostStored[ipu] = std::max(mostStored[ipu], task.ioTileStoreBytes);
  }
  for (size_t ipu = 0; ipu < mostLoaded.size(); ++ipu) {
    buffers.ioTiles[ipu] += device::kIoTileBuffers * (mostLoaded[ipu] + mostStored[ipu]);
  }
}

} // namespace

ProgramMemory planProgramMemory(const compiler::Program& program, const MemoryOptions& options,
                                const device::IpuSystemConfig& system) {
  options.validate(system);
  const ir::Graph& graph = *program.graph;
  ProgramMemory memory;
  memory.options = options;
  // Step 1: slots.
  MemoryPlanOptions planOptions;
  planOptions.numIpus = system.numIpus;
  memory.plan = planMemory(graph, planOptions);
  RuntimeBuffers& buffers = memory.buffers;
  // Step 2: off-chip variables, transfers between tasks and their buffers.
  buffers.offChip = offChipVariables(graph, memory.plan, options.weights, options.optimizerState,
                                     options.accumulators);
  memory.transfers = planTaskTransfers(program, memory.plan, options.activations);
  planTransferBuffers(program, memory.transfers, options, system, buffers);
  // Step 3: Streaming Memory traffic.
  const IoTileRoutes routes = ioTileRoutes(graph, memory.plan, options.weights,
                                           options.optimizerState, options.accumulators);
  memory.streamed = streamedBytesPerNode(graph, memory.plan, buffers.offChip, routes);
  planIoTileStreaming(program, memory.streamed, options, system, memory.transfers, buffers);
  // Step 4: temporaries and transient memory.
  buffers.temporaryBudget = temporaryBudgets(system, options.availableMemoryProportion);
  std::vector<uint64_t> workingBytes;
  for (size_t index = 0; index < graph.nodes().size(); ++index) {
    const ir::Node& node = *graph.nodes()[index];
    const double own = node.availableMemoryProportion(); // set_available_memory on this op
    memory.temporaries.push_back(planOpTemporaries(
        node,
        own > 0.0 ? temporaryBudget(system, own)
                  : buffers.temporaryBudget[static_cast<size_t>(node.placement().ipu)],
        options.halfPartials));
    workingBytes.push_back(memory.streamed[index].working);
  }
  const TransientMemory transient =
      planTransientMemory(graph, memory.plan, system.numIpus, memory.temporaries, workingBytes);
  buffers.temporaries = transient.temporaries;
  buffers.streamedIn = transient.streamedIn;
  // Step 5: the report.
  memory.report = buildMemoryReport(graph, memory.plan, system, buffers);
  return memory;
}

} // namespace popsim::memory
