#pragma once

#include "ir/shape.h"

#include <cstdint>
#include <string>

namespace popsim::compiler {

// Which device iterations' outputs a call returns to the host.
enum class OutputMode {
  All,    // every iteration, concatenated along dimension 0
  Final,  // only the last iteration
  EveryN, // iterations period-1, 2*period-1, ... (period divides the count)
  Sum,    // the elementwise sum over all iterations
};

const char* outputModeName(OutputMode mode);

struct OutputSpec {
  OutputMode mode = OutputMode::All;
  int64_t period = 1; // EveryN only

  // Throws InvalidOption when the period does not fit the iteration count.
  void validate(int64_t deviceIterations) const;
  // How many iterations' outputs are returned per call.
  int64_t returnedIterations(int64_t deviceIterations) const;
  // The slot iteration `iteration` is written to, or -1 when it is not returned.
  int64_t slotOf(int64_t iteration, int64_t deviceIterations) const;
  // Host shape of an output whose per-iteration shape is `shape`: several
  // returned iterations are concatenated along dimension 0 (scalars are
  // stacked into a vector); a single one keeps the model's own shape.
  ir::Shape hostShape(const ir::Shape& shape, int64_t deviceIterations) const;
};

} // namespace popsim::compiler
