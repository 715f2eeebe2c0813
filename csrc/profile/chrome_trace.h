#pragma once

#include "profile/call_trace.h"
#include "profile/json.h"
#include "profile/pipeline_stages.h"

#include <string>
#include <vector>

namespace popsim::runtime {
struct ProgramStep;
struct TaskWallTime;
} // namespace popsim::runtime

// A model's last call as Chrome Trace Event JSON (trace.json; it opens in
// Perfetto and chrome://tracing). Layout:
// 1. One process per IPU ("IPU k"), its thread "tasks" holding a complete
//    event per task run (F<s>, B<s>, FB<s>, U<k>) with step, micro-batch and
//    pipeline cycle in its args.
// 2. Inside each task of the call's first step, one event per op from the
//    program's per-op cycles. Every step runs the same ops, so one step shows
//    them all while the file stays small.
// 3. A "links" process, one thread per IPU, with the transfers each IPU makes:
//    inter-IPU copies it receives, host inputs and outputs, the compute tiles'
//    part of them ("stream_copy"), and Streaming Memory traffic.
// 4. A "host" process with the call's measured wall time and each task run on
//    the host's clock. Host and simulated times differ, so these are tracks of
//    their own, starting at 0.
// Timestamps are simulated microseconds (cycles / clock). Each task and
// transfer keeps its trace event in its args (start_cycle, end_cycle, ...),
// so readers rebuild the CallTrace exactly. The top-level "popsim" key, which
// viewers ignore, holds what analyses need.
namespace popsim::profile {

// The simulated events (layout parts 1 to 3), metadata included, as the
// comma-separated body of a JSON array: a compilation's calls all simulate
// alike, so writers serialize them once.
std::string simulatedEvents(const CallTrace& trace,
                            const std::vector<runtime::ProgramStep>& program,
                            const std::vector<StageBlocks>& stages);

// The host process (layout part 4) of call number `calls`.
Json hostEvents(int64_t calls, double wallSeconds, double simulatedSeconds,
                const std::vector<runtime::TaskWallTime>& taskWallTimes);

// The whole trace.json text.
std::string traceDocument(const std::string& simulatedBody, const Json& hostEvents,
                          const Json& popsimData);

// The call a trace.json document records (its "popsim" part and the events
// of tasks and transfers).
CallTrace callTraceFromDocument(const Json& document);

} // namespace popsim::profile
