#pragma once

#include "clock/simulated_clock.h"
#include "compiler/program.h"
#include "costs/cost_table.h"
#include "memory/program_memory.h"

namespace popsim::clock {

// What the clock is told beyond the program and its costs.
struct ClockOptions {
  // Options.enableSyntheticData: no host I/O, so the clock charges no input
  // or output transfers (the data comes from the device).
  bool syntheticData = false;
  // Options.syncPattern: whether a host exchange synchronises every IPU
  // (Full, and ReplicaAndLadder within a replica) or each IPU syncs with the
  // host on its own (SinglePipeline). See ClockSetup::hostExchangesStallEveryIpu.
  bool hostExchangesStallEveryIpu = true;
};

// A call of `program` for the clock: its tasks' costs, its schedule repeated
// for each step, the input micro-batches each host link may prepare ahead
// (into the prefetch buffers `memory` planned), and the outputs each task
// run returns to the host (as the output mode says; summed outputs stay on
// the device until the call's end). `program` and `costs` must outlive the
// setup.
ClockSetup callSetup(const compiler::Program& program, const memory::ProgramMemory& memory,
                     const costs::CostTable& costs, const ClockOptions& options);

} // namespace popsim::clock
