#pragma once

#include "popsim/sizing_report.h"
#include "profile/call_trace.h"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace popsim::runtime {
struct ProgramStep;
}

// Where an IPU's time goes during a call, read off the call's timeline. Each
// task event splits by its ops' costs (their sync, exchange and compute
// parts, with collectives and recomputed ops apart); transfer events are
// inter-IPU copies, host I/O or Streaming Memory; and the time the IPU waits
// splits by what it waits in: the sync after every pipeline cycle, a pipeline
// cycle in which it has no task (the pipeline filling or draining), a
// transfer still in flight, or the other IPUs of a pipeline cycle (stages of
// unequal length). The parts add up to the call's cycles on every IPU.
namespace popsim::profile {

using ::popsim::kTimeParts;
using ::popsim::TimePart;
using ::popsim::timePartName;
// The part's name by index.
const char* timePartName(size_t part);

using TimeCycles = std::array<uint64_t, kTimeParts>;
using CycleInterval = std::pair<uint64_t, uint64_t>;

// Per IPU, the call's cycles by part. `cycleSpans` are the call's pipeline
// cycles on the simulated clock (each ending with a sync of `syncCycles`).
std::vector<TimeCycles> timeBreakdown(const CallTrace& trace,
                                      const std::vector<runtime::ProgramStep>& program,
                                      const std::vector<CycleInterval>& cycleSpans,
                                      uint64_t syncCycles);

} // namespace popsim::profile
