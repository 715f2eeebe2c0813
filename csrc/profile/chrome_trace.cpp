#include "profile/chrome_trace.h"

#include "common/strings.h"

#include "profile/records_json.h"
#include "runtime/executable.h"

#include <cmath>
#include <map>
#include <set>

namespace popsim::profile {
namespace {

constexpr int64_t kHostPid = 1;
constexpr int64_t kLinksPid = 2;
constexpr int64_t kIpuPidBase = 100; // IPU k is process 100 + k
constexpr int64_t kTaskTid = 1;

int64_t ipuPid(int64_t ipu) { return kIpuPidBase + ipu; }

// Rounded to nanoseconds (of microseconds), the same way for every event so
// that nested events stay inside their parents.
double round3(double value) { return std::nearbyint(value * 1e3) / 1e3; }

// Reserved colour names of chrome://tracing's viewer (Perfetto picks its
// own); only names every version knows, as it rejects a trace with another.
const char* chromeColour(const std::string& kind) {
  if (kind == "forward") return "good";
  if (kind == "backward") return "terrible";
  if (kind == "forward+backward") return "bad";
  if (kind == "update") return "rail_response";
  return "generic_work"; // transfers
}

void appendMetadata(Json& events, int64_t pid, const std::string& process, int64_t sortIndex,
                    const std::vector<std::pair<int64_t, std::string>>& threads) {
  events.push_back({{"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"name", "process_name"},
                    {"args", {{"name", process}}}});
  events.push_back({{"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"name", "process_sort_index"},
                    {"args", {{"sort_index", sortIndex}}}});
  for (const auto& [tid, name] : threads) {
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"name", "thread_name"},
                      {"args", {{"name", name}}}});
  }
}

class SimulatedClock {
public:
  explicit SimulatedClock(double clockHz) : microsPerCycle_(1e6 / clockHz) {}
  double us(uint64_t cycles) const { return round3(static_cast<double>(cycles) * microsPerCycle_); }
  std::pair<double, double> span(uint64_t start, uint64_t end) const {
    const double ts = us(start);
    return {ts, round3(us(end) - ts)};
  }

private:
  double microsPerCycle_;
};

// The task's ops laid end to end inside its event; none if their cycles do
// not add up to the task's, rather than a misleading picture.
void appendOpEvents(Json& events, const TraceEvent& event,
                    const std::vector<const runtime::ProgramStep*>& ops,
                    const SimulatedClock& clock, int64_t pid) {
  uint64_t total = 0;
  for (const runtime::ProgramStep* op : ops)
    total += op->cycles;
  if (total != event.end - event.start) return;
  uint64_t start = event.start;
  for (const runtime::ProgramStep* op : ops) {
    const auto [ts, dur] = clock.span(start, start + op->cycles);
    Json args = {
        {"location", op->location}, {"implementation", op->implementation}, {"cycles", op->cycles}};
    if (op->temporaryBytes != 0) { // matmuls and convolutions
      args["temporary_bytes"] = op->temporaryBytes;
      args["passes"] = op->passes;
    }
    events.push_back({{"name", op->name},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", kTaskTid},
                      {"ts", ts},
                      {"dur", dur},
                      {"args", args}});
    start += op->cycles;
  }
}

std::string serialized(const Json& events) {
  std::string body;
  for (const Json& event : events) {
    if (!body.empty()) body += ",\n";
    body += jsonText(event);
  }
  return body;
}

} // namespace

std::string simulatedEvents(const CallTrace& trace,
                            const std::vector<runtime::ProgramStep>& program,
                            const std::vector<StageBlocks>& stages) {
  const SimulatedClock clock(trace.clockHz);
  // Per (IPU, task), the ops its compute part runs, in order (inter-IPU
  // copies are the task's "copy" event, not compute).
  std::map<std::pair<int64_t, std::string>, std::vector<const runtime::ProgramStep*>> ops;
  for (const runtime::ProgramStep& step : program) {
    if (step.op != "ipu_copy") ops[{step.ipu, step.task}].push_back(&step);
  }
  Json events = Json::array();
  for (int64_t ipu = 0; ipu < trace.numIpus(); ++ipu) {
    std::vector<std::string> blocks;
    for (const StageBlocks& stage : stages) {
      if (stage.ipu == ipu) blocks.insert(blocks.end(), stage.blocks.begin(), stage.blocks.end());
    }
    std::string label = "IPU " + std::to_string(ipu);
    if (!blocks.empty()) {
      label += " (" + join(blocks, ", ") + ")";
    }
    appendMetadata(events, ipuPid(ipu), label, ipu, {{kTaskTid, "tasks"}});
  }
  std::vector<std::pair<int64_t, std::string>> linkThreads;
  for (int64_t ipu = 0; ipu < trace.numIpus(); ++ipu) {
    linkThreads.emplace_back(ipu + 1, "IPU " + std::to_string(ipu));
  }
  appendMetadata(events, kLinksPid, "links (IPU-Links and host streams)", trace.numIpus(),
                 linkThreads);
  for (const TraceEvent& event : trace.events) {
    const auto [ts, dur] = clock.span(event.start, event.end);
    const bool transfer = isTransferKind(event.kind);
    Json args = {{"task", event.task},
                 {"kind", event.kind},
                 {"ipu", event.ipu},
                 {"step", event.step},
                 {"micro_batch", event.microBatch},
                 {"cycle", event.cycle},
                 {"start_cycle", event.start},
                 {"end_cycle", event.end}};
    if (!event.fromIpus.empty()) args["from_ipus"] = event.fromIpus;
    if (event.output >= 0) args["output"] = event.output;
    if (event.ioTiles) args["io_tiles"] = true;
    std::string name = transfer ? event.kind : event.task;
    if (!event.fromIpus.empty()) {
      name += " from IPU " + join(event.fromIpus, ", ");
    }
    const int64_t pid = transfer ? kLinksPid : ipuPid(event.ipu);
    const int64_t tid = transfer ? event.ipu + 1 : kTaskTid;
    events.push_back({{"name", name},
                      {"cat", event.kind},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", ts},
                      {"dur", dur},
                      {"cname", chromeColour(event.kind)},
                      {"args", args}});
    if (!transfer && event.step == 0) {
      const auto found = ops.find({event.ipu, event.task});
      if (found != ops.end()) appendOpEvents(events, event, found->second, clock, pid);
    }
  }
  return serialized(events);
}

Json hostEvents(int64_t calls, double wallSeconds, double simulatedSeconds,
                const std::vector<runtime::TaskWallTime>& taskWallTimes) {
  std::set<int64_t> ipus;
  for (const runtime::TaskWallTime& run : taskWallTimes)
    ipus.insert(run.ipu);
  std::vector<std::pair<int64_t, std::string>> threads = {{1, "wall clock of the last call"}};
  for (int64_t ipu : ipus) {
    threads.emplace_back(ipu + 2, "IPU " + std::to_string(ipu) + " tasks (host thread)");
  }
  Json events = Json::array();
  appendMetadata(events, kHostPid, "host", -1, threads);
  events.push_back({{"name", "call (host wall time)"},
                    {"cat", "host"},
                    {"ph", "X"},
                    {"pid", kHostPid},
                    {"tid", 1},
                    {"ts", 0},
                    {"dur", round3(wallSeconds * 1e6)},
                    {"args",
                     {{"call", calls},
                      {"wall_ms", std::nearbyint(wallSeconds * 1e9) / 1e6},
                      {"simulated_ms", std::nearbyint(simulatedSeconds * 1e9) / 1e6}}}});
  for (const runtime::TaskWallTime& run : taskWallTimes) {
    const double ts = round3(run.start * 1e6);
    events.push_back({{"name", run.task},
                      {"cat", "host_task"},
                      {"ph", "X"},
                      {"pid", kHostPid},
                      {"tid", run.ipu + 2},
                      {"ts", ts},
                      {"dur", round3(run.end * 1e6 - ts)},
                      {"args",
                       {{"ipu", run.ipu},
                        {"task", run.task},
                        {"step", run.step},
                        {"micro_batch", run.microBatch},
                        {"wall_ms", std::nearbyint((run.end - run.start) * 1e9) / 1e6}}}});
  }
  return events;
}

std::string traceDocument(const std::string& simulatedBody, const Json& host,
                          const Json& popsimData) {
  std::string events = serialized(host);
  if (!simulatedBody.empty()) events += (events.empty() ? "" : ",\n") + simulatedBody;
  return "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"popsim\"},\n\"popsim\":" +
         jsonText(popsimData) + ",\n\"traceEvents\":[\n" + events + "\n]}\n";
}

CallTrace callTraceFromDocument(const Json& document) {
  const Json& meta = document.at("popsim");
  CallTrace trace;
  trace.totalCycles = meta.at("total_cycles").get<uint64_t>();
  trace.clockHz = meta.at("clock_hz").get<double>();
  trace.pipeline = pipelineFromJson(meta.at("pipeline"));
  for (const Json& event : document.at("traceEvents")) {
    const std::string kind = event.value("cat", std::string());
    if (event.value("ph", std::string()) != "X" || !(isTaskKind(kind) || isTransferKind(kind))) {
      continue;
    }
    const Json& args = event.at("args");
    TraceEvent entry;
    entry.ipu = args.at("ipu").get<int64_t>();
    entry.task = args.at("task").get<std::string>();
    entry.kind = args.at("kind").get<std::string>();
    entry.step = args.at("step").get<int64_t>();
    entry.microBatch = args.at("micro_batch").get<int64_t>();
    entry.cycle = args.at("cycle").get<int64_t>();
    entry.start = args.at("start_cycle").get<uint64_t>();
    entry.end = args.at("end_cycle").get<uint64_t>();
    entry.fromIpus = args.value("from_ipus", std::vector<int64_t>());
    entry.output = args.value("output", int64_t{-1});
    entry.ioTiles = args.value("io_tiles", false);
    trace.events.push_back(std::move(entry));
  }
  return trace;
}

} // namespace popsim::profile
