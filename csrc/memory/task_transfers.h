#pragma once

#include "compiler/program.h"
#include "memory/memory_plan.h"
#include "memory/off_chip_placement.h"

#include <cstdint>
#include <vector>

namespace popsim::memory {

// A value that crosses from the task that writes it to a later task that
// reads it:
// - over the IPU-Links, received where an ipu_copy node runs (`copy`);
// - or kept on its IPU, the pipeline's stash (`copy` null), because other
//   tasks run in between; on chip, or in Streaming Memory (`offChip`).
// (A value the very next task of its IPU reads stays where it is.)
struct TaskTransfer {
  const ir::Value* value = nullptr; // a storage root
  size_t from = 0;
  size_t to = 0;
  const ir::Node* copy = nullptr;
  bool offChip = false;
};

// What one task moves besides its ops' work.
struct TaskIo {
  std::vector<size_t> streamedInputs;  // graph inputs it streams in, by index
  std::vector<size_t> producedOutputs; // graph outputs it writes, by index
  // Its stash kept off chip: streamed out after it runs and in before.
  uint64_t stashInBytes = 0;
  uint64_t stashOutBytes = 0;
  // Off-chip tensors (its ops' and its stash's) loaded and stored through
  // its IPU's IO tiles.
  uint64_t ioTileLoadBytes = 0;
  uint64_t ioTileStoreBytes = 0;
};

struct TaskTransfers {
  std::vector<TaskIo> tasks;           // by task index
  std::vector<TaskTransfer> transfers; // in graph order of their readers
};

// Which task streams each input (its first user's on its home IPU), which
// writes each output, and every value that crosses tasks: per inter-IPU
// copy, and per stashed value and reading task. `activations` says which
// stashed values live off chip.
TaskTransfers planTaskTransfers(const compiler::Program& program, const MemoryPlan& plan,
                                const TensorLocation& activations);

} // namespace popsim::memory
