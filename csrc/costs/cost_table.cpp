#include "costs/cost_table.h"

#include <algorithm>

namespace popsim::costs {
namespace {

// Step 2: host transfers of each task.
void addHostTransfers(const compiler::Program& program, const memory::ProgramMemory& memory,
                      const device::IpuSystemConfig& system, CostTable& table) {
  const ir::Graph& graph = *program.graph;
  const device::ChipSpec chip = system.spec();
  // A host thread serves its replicas one after another
  // (IpuSystemConfig::replicasPerHostThread), and each replica waits for the
  // others' turns: its transfer costs their latencies and bytes together. The
  // copies between IO tiles and compute tiles are on chip, each replica's own.
  const auto turns = static_cast<uint64_t>(system.replicasPerHostThread);
  for (size_t task = 0; task < table.tasks.size(); ++task) {
    TaskCycles& cycles = table.tasks[task];
    const memory::TaskIo& io = memory.transfers.tasks[task];
    for (size_t i : io.streamedInputs) {
      const uint64_t bytes = graph.inputStreamedBytes(i);
      const ir::HostOverlap overlap = graph.inputOverlap(i);
      cycles.inputLatencyCycles += turns * hostLatencyCycles(chip);
      if (overlap == ir::HostOverlap::None) {
        cycles.inputDataCycles += hostDataCycles(turns * bytes, chip);
        continue;
      }
      cycles.overlappedInputCycles += hostDataCycles(turns * bytes, chip);
      cycles.ioTileInputCycles += ioTileCopyCycles(bytes, system.ioTiles, chip);
      cycles.overlapAcrossSteps &= overlap == ir::HostOverlap::DeviceIterationLoop;
    }
    cycles.streamsInputs = cycles.inputLatencyCycles != 0;
    cycles.streamsOverlappedInputs = cycles.overlappedInputCycles != 0;
    for (size_t i : io.producedOutputs) {
      const uint64_t bytes = graph.outputs()[i]->type().bytes();
      HostOutputCost cost;
      cost.cycles = turns * hostLatencyCycles(chip) + hostDataCycles(turns * bytes, chip);
      const ir::HostOverlap overlap = graph.outputOverlap(i);
      if (overlap != ir::HostOverlap::None) {
        cost.ioTiles = true;
        cost.ioTileCycles = ioTileCopyCycles(bytes, system.ioTiles, chip);
        cost.acrossSteps = overlap == ir::HostOverlap::DeviceIterationLoop;
      }
      table.outputs[task].push_back({i, cost});
    }
  }
}

// Step 3: Streaming Memory transfers, one per op and direction, and one each
// way for the task's off-chip stash.
void addStreaming(const compiler::Program& program, const memory::ProgramMemory& memory,
                  const device::IpuSystemConfig& system, CostTable& table) {
  const device::ChipSpec chip = system.spec();
  const auto cycles = [&](uint64_t bytes) {
    return bytes == 0 ? 0 : streamingMemoryCycles(bytes, chip);
  };
  for (size_t index = 0; index < memory.streamed.size(); ++index) {
    const memory::StreamedBytes& node = memory.streamed[index];
    TaskCycles& costs = table.tasks[program.layout.taskOf(*program.graph->nodes()[index])];
    costs.streamInCycles += cycles(node.in - node.ioTileIn);
    costs.streamOutCycles += cycles(node.out - node.ioTileOut);
    costs.ioTileLoadCycles += cycles(node.ioTileIn);
    costs.ioTileStoreCycles += cycles(node.ioTileOut);
  }
  const memory::TensorLocation& stash = memory.options.activations;
  for (size_t index = 0; index < table.tasks.size(); ++index) {
    TaskCycles& costs = table.tasks[index];
    const memory::TaskIo& io = memory.transfers.tasks[index];
    (stash.ioTilesToLoad ? costs.ioTileLoadCycles : costs.streamInCycles) +=
        cycles(io.stashInBytes);
    (stash.ioTilesToStore ? costs.ioTileStoreCycles : costs.streamOutCycles) +=
        cycles(io.stashOutBytes);
    if (io.ioTileLoadBytes != 0 || io.ioTileStoreBytes != 0) {
      costs.ioTileLoadCopyCycles =
          io.ioTileLoadBytes != 0 ? ioTileCopyCycles(io.ioTileLoadBytes, system.ioTiles, chip) : 0;
      costs.ioTileStoreCopyCycles =
          io.ioTileStoreBytes != 0 ? ioTileCopyCycles(io.ioTileStoreBytes, system.ioTiles, chip)
                                   : 0;
    }
  }
}

} // namespace

CostTable buildCostTable(const compiler::Program& program, const memory::ProgramMemory& memory,
                         const device::IpuSystemConfig& system) {
  const ir::Graph& graph = *program.graph;
  const device::ChipSpec chip = system.spec();
  CostTable table;
  table.tasks.assign(program.layout.tasks().size(), {});
  table.outputs.assign(program.layout.tasks().size(), {});
  // Step 1: ops.
  for (size_t index = 0; index < graph.nodes().size(); ++index) {
    const ir::Node& node = *graph.nodes()[index];
    table.ops.push_back(estimateOpCost(node, chip, memory.temporaries[index]));
    const uint64_t cycles = table.ops.back().total();
    TaskCycles& task = table.tasks[program.layout.taskOf(node)];
    task.computeCycles += cycles;
    if (node.kind() == ir::OpKind::IpuCopy) {
      task.copyCycles += cycles;
      const int64_t source = memory.plan.slot(node.input(0)).ipu;
      auto& sources = task.copySources;
      if (std::find(sources.begin(), sources.end(), source) == sources.end()) {
        sources.insert(std::upper_bound(sources.begin(), sources.end(), source), source);
      }
    }
  }
  addHostTransfers(program, memory, system, table);
  addStreaming(program, memory, system, table);
  table.syncCycles = program.layout.numIpus() > 1 ? syncCycles(program.layout.numIpus(), chip) : 0;
  return table;
}

} // namespace popsim::costs
