#pragma once

#include "compiler/program.h"
#include "costs/cost_model.h"
#include "device/ipu_system.h"
#include "memory/program_memory.h"

#include <cstdint>
#include <vector>

namespace popsim::costs {

// One task's costs, from the cost model.
struct TaskCycles {
  uint64_t computeCycles = 0; // inter-IPU copies included
  uint64_t copyCycles = 0;
  std::vector<int64_t> copySources; // IPUs its inter-IPU copies come from
  // Whether it streams a micro-batch of inputs in, the host's part of the
  // transfer (of all its inputs), and the bytes' part of the inputs that
  // cross on its compute tiles.
  bool streamsInputs = false;
  uint64_t inputLatencyCycles = 0;
  uint64_t inputDataCycles = 0;
  // Inputs through the IO tiles: their bytes' part, which crosses into the
  // IO tiles once the host is ready, the copy to the compute tiles, and
  // whether the transfers may run ahead across steps
  // (OverlapDeviceIterationLoop) or only within one (AccumulationLoop).
  bool streamsOverlappedInputs = false;
  uint64_t overlappedInputCycles = 0;
  uint64_t ioTileInputCycles = 0;
  bool overlapAcrossSteps = true;
  // Streaming Memory transfers before its ops and after them, through the
  // compute tiles.
  uint64_t streamInCycles = 0;
  uint64_t streamOutCycles = 0;
  // Off-chip tensors loaded and stored through the IO tiles
  // (useIOTilesToLoad / useIOTilesToStore): their Streaming Memory transfers,
  // beside the compute, and the compute tiles' copies from and to the IO tiles.
  uint64_t ioTileLoadCycles = 0;
  uint64_t ioTileLoadCopyCycles = 0;
  uint64_t ioTileStoreCycles = 0;
  uint64_t ioTileStoreCopyCycles = 0;
};

// One output a task run streams to the host: the transfer, and through IO
// tiles the copy to them first and how far the transfer may lag behind (the
// step's end for AccumulationLoop, the call's for DeviceIterationLoop).
struct HostOutputCost {
  int64_t output = -1; // the graph output it carries
  uint64_t cycles = 0;
  bool ioTiles = false;
  uint64_t ioTileCycles = 0;
  bool acrossSteps = true;
};

// A graph output its task streams to the host when the call returns it.
struct OutputTransfer {
  size_t output = 0; // index in the graph's outputs
  HostOutputCost cost;
};

// The cost stage's result: what every op and transfer of a planned program
// costs on the simulated chip, which the clock replays.
struct CostTable {
  std::vector<OpCost> ops;                          // per node, in graph order
  std::vector<TaskCycles> tasks;                    // by task index
  std::vector<std::vector<OutputTransfer>> outputs; // by task index
  uint64_t syncCycles = 0; // a sync across the program's IPUs, after every pipeline cycle
};

// The costs of `program` as `memory` planned it on `system`'s chip (its
// compute tiles):
// 1. each op from the cost model, under its planned temporaries; inter-IPU
//    copies are also the receiving task's copy time;
// 2. each task's host inputs (the host's latency, and the bytes on the
//    compute tiles or through the IO tiles) and outputs;
// 3. each task's Streaming Memory transfers: what its ops stream, and its
//    off-chip stash, through the compute or the IO tiles.
CostTable buildCostTable(const compiler::Program& program, const memory::ProgramMemory& memory,
                         const device::IpuSystemConfig& system);

} // namespace popsim::costs
