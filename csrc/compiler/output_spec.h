#pragma once

#include "ir/shape.h"

#include <cstdint>
#include <string>

namespace popsim::compiler {

// Which device iterations' outputs a call returns to the host.
enum class OutputMode {
  All,    // every iteration, concatenated along dimension 0
  Final,  // only the last iteration
  EveryN, // steps period-1, 2*period-1, ..., each with all its micro-batches
  Sum,    // the elementwise sum over all iterations
};

const char* outputModeName(OutputMode mode);

// A call runs `iterations` micro-batches: device iterations (steps) of
// `stepMicroBatches` micro-batches each (the gradient accumulation).
struct OutputSpec {
  OutputMode mode = OutputMode::All;
  int64_t period = 1; // EveryN only
  // Asserts that the period divides the steps (popsim.Options checks it for users).
  void validate(int64_t deviceIterations) const;
  // How many micro-batches' outputs are returned per call.
  int64_t returnedIterations(int64_t iterations) const;
  // The slot micro-batch `iteration` is written to, or -1 when it is not
  // returned. EveryN returns every period-th step of `stepMicroBatches` (the
  // gradient accumulation) with all of its micro-batches, as PopART's
  // AnchorReturnType EveryN returns every N-th global batch with its
  // accumulation steps; so the period must divide the steps.
  int64_t slotOf(int64_t iteration, int64_t iterations, int64_t stepMicroBatches = 1) const;
  // Host shape of an output whose per-iteration shape is `shape`: several
  // returned iterations are concatenated along dimension 0 (scalars are
  // stacked into a vector); a single one keeps the model's own shape.
  ir::Shape hostShape(const ir::Shape& shape, int64_t deviceIterations) const;
};

} // namespace popsim::compiler
