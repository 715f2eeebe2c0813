#pragma once

#include "compiler/program.h"
#include "device/ipu_system.h"
#include "memory/memory_options.h"
#include "memory/memory_plan.h"
#include "memory/memory_report.h"
#include "memory/op_temporaries.h"
#include "memory/streaming_plan.h"
#include "memory/task_transfers.h"

#include <vector>

namespace popsim::memory {

// Every byte decision about a program: the memory stage's result, which the
// cost table, the clock and the runtime read.
struct ProgramMemory {
  // What the plan was made for (the clock replays prefetching with the
  // buffers planned here).
  MemoryOptions options;
  // A slot for every value (views share their input's).
  MemoryPlan plan;
  // What crosses between tasks (inter-IPU copies, the stash) and what each
  // task streams in and out.
  TaskTransfers transfers;
  // Per node, in graph order: a matmul's or convolution's temporaries under
  // its budget, and the off-chip bytes the node streams in and out.
  std::vector<OpTemporaries> temporaries;
  std::vector<StreamedBytes> streamed;
  // What the runtime adds per IPU (stash, prefetch and IO tile buffers,
  // transient memory) and the tensors kept off chip.
  RuntimeBuffers buffers;
  // Each IPU's memory by category. Whether it fits is the caller's question
  // (checkMemoryFits): a sizing run reports a program that does not.
  MemoryReport report;

  bool isOffChip(const ir::Value* root) const { return buffers.offChip.count(root) != 0; }
};

// Plans `program` on `system`:
// 1. a slot per value (liveness; activations share an arena per IPU);
// 2. the variables placed off chip, and the transfers between tasks with
//    the stash they need (on chip and off), the prefetch buffers and the IO
//    tiles' buffers of overlapped inputs and outputs;
// 3. what each op streams from Streaming Memory, through the compute or the
//    IO tiles, and the IO tiles' buffers for it;
// 4. each matmul's and convolution's temporaries under its IPU's (or its
//    own) availableMemoryProportion, and what they and streamed-in tensors
//    add beyond the activation arena;
// 5. the memory report.
ProgramMemory planProgramMemory(const compiler::Program& program, const MemoryOptions& options,
                                const device::IpuSystemConfig& system);

} // namespace popsim::memory
