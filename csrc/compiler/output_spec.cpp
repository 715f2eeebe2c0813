#include "compiler/output_spec.h"

#include "common/check.h"

namespace popsim::compiler {

const char* outputModeName(OutputMode mode) {
  switch (mode) {
  case OutputMode::All: return "All";
  case OutputMode::Final: return "Final";
  case OutputMode::EveryN: return "EveryN";
  case OutputMode::Sum: return "Sum";
  }
  return "?";
}

void OutputSpec::validate(int64_t deviceIterations) const {
  // popsim.Options checks what users set (outputMode, deviceIterations) and
  // names the option; these hold for any options it builds.
  POPSIM_ASSERT(deviceIterations >= 1, "deviceIterations ", deviceIterations, ".");
  POPSIM_ASSERT(mode != OutputMode::EveryN || (period >= 1 && deviceIterations % period == 0),
                "OutputMode.EveryN with output_return_period ", period, " and deviceIterations ",
                deviceIterations, ".");
}

int64_t OutputSpec::returnedIterations(int64_t iterations) const {
  switch (mode) {
  case OutputMode::All: return iterations;
  case OutputMode::EveryN: return iterations / period; // whole steps
  case OutputMode::Final:
  case OutputMode::Sum: return 1;
  }
  return 1;
}

int64_t OutputSpec::slotOf(int64_t iteration, int64_t iterations, int64_t stepMicroBatches) const {
  switch (mode) {
  case OutputMode::All: return iteration;
  case OutputMode::EveryN: {
    const int64_t step = iteration / stepMicroBatches;
    if ((step + 1) % period != 0) return -1;
    return ((step + 1) / period - 1) * stepMicroBatches + iteration % stepMicroBatches;
  }
  case OutputMode::Final: return iteration == iterations - 1 ? 0 : -1;
  case OutputMode::Sum: return 0;
  }
  return -1;
}

ir::Shape OutputSpec::hostShape(const ir::Shape& shape, int64_t deviceIterations) const {
  const int64_t count = returnedIterations(deviceIterations);
  if (count == 1) {
    return shape;
  }
  if (shape.empty()) {
    return {count};
  }
  ir::Shape host = shape;
  host[0] *= count;
  return host;
}

} // namespace popsim::compiler
