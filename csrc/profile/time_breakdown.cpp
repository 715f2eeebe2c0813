#include "profile/time_breakdown.h"

#include "runtime/executable.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace popsim::profile {
namespace {

constexpr const char* kPartNames[kTimeParts] = {"compute",
                                                "exchange",
                                                "syncs",
                                                "collectives",
                                                "recomputation",
                                                "inter-IPU copies",
                                                "host I/O",
                                                "Streaming Memory",
                                                "pipeline fill and drain",
                                                "waiting for other IPUs"};

size_t index(TimePart part) { return static_cast<size_t>(part); }

// Per (IPU, task), its ops' cycles by part (the copies it receives are its
// own event, not part of its compute).
std::map<std::pair<int64_t, std::string>, TimeCycles>
taskParts(const std::vector<runtime::ProgramStep>& program) {
  std::map<std::pair<int64_t, std::string>, TimeCycles> parts;
  for (const runtime::ProgramStep& op : program) {
    if (op.op == "ipu_copy") continue;
    TimeCycles& task = parts.try_emplace({op.ipu, op.task}, TimeCycles{}).first->second;
    if (op.recomputed) {
      task[index(TimePart::Recomputation)] += op.cycles;
    } else if (op.collective) {
      task[index(TimePart::Collectives)] += op.cycles;
    } else {
      task[index(TimePart::Compute)] += op.computeCycles;
      task[index(TimePart::Exchange)] += op.exchangeCycles;
      task[index(TimePart::Syncs)] += op.syncCycles;
    }
  }
  return parts;
}

// Adds `cycles` to `into` in proportion to `weights` (all to compute if they
// are all zero), the rounding remainder to the largest part.
void split(uint64_t cycles, const TimeCycles* weights, TimeCycles& into) {
  uint64_t total = 0;
  if (weights != nullptr) {
    for (uint64_t weight : *weights)
      total += weight;
  }
  if (total == 0) {
    into[index(TimePart::Compute)] += cycles;
    return;
  }
  uint64_t given = 0;
  size_t largest = 0;
  for (size_t part = 0; part < kTimeParts; ++part) {
    // 128-bit: cycles times a weight can pass 2^64 for a long call.
    __extension__ using Wide = unsigned __int128;
    const auto share = static_cast<uint64_t>(static_cast<Wide>(cycles) * (*weights)[part] / total);
    into[part] += share;
    given += share;
    if ((*weights)[part] > (*weights)[largest]) largest = part;
  }
  into[largest] += cycles - given;
}

std::vector<CycleInterval> merged(std::vector<CycleInterval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<CycleInterval> result;
  for (const auto& [start, end] : intervals) {
    if (!result.empty() && start <= result.back().second) {
      result.back().second = std::max(result.back().second, end);
    } else if (end > start) {
      result.emplace_back(start, end);
    }
  }
  return result;
}

// Cycles of sorted, disjoint `gaps` covered by sorted, disjoint `intervals`.
uint64_t overlap(const std::vector<CycleInterval>& gaps,
                 const std::vector<CycleInterval>& intervals) {
  uint64_t total = 0;
  size_t j = 0;
  for (const auto& [start, end] : gaps) {
    while (j < intervals.size() && intervals[j].second <= start)
      ++j;
    for (size_t k = j; k < intervals.size() && intervals[k].first < end; ++k) {
      total += std::min(end, intervals[k].second) - std::max(start, intervals[k].first);
    }
  }
  return total;
}

// The parts of `span` that no interval of `busy` (sorted, disjoint) covers.
void appendGaps(CycleInterval span, const std::vector<CycleInterval>& busy,
                std::vector<CycleInterval>& gaps) {
  uint64_t at = span.first;
  for (const auto& [start, end] : busy) {
    if (start > at && std::min(start, span.second) > at) {
      gaps.emplace_back(at, std::min(start, span.second));
    }
    at = std::max(at, end);
  }
  if (at < span.second) gaps.emplace_back(at, span.second);
}

} // namespace

const char* timePartName(size_t part) { return kPartNames[part]; }

} // namespace popsim::profile

namespace popsim {

const char* timePartName(TimePart part) { return profile::timePartName(static_cast<size_t>(part)); }

} // namespace popsim

namespace popsim::profile {

std::vector<TimeCycles> timeBreakdown(const CallTrace& trace,
                                      const std::vector<runtime::ProgramStep>& program,
                                      const std::vector<CycleInterval>& cycleSpans,
                                      uint64_t syncCycles) {
  const auto parts = taskParts(program);
  const auto ipus = static_cast<size_t>(trace.numIpus());
  std::vector<TimeCycles> times(ipus, TimeCycles{});
  struct Busy {
    int64_t cycle;
    uint64_t start, end;
  };
  std::vector<std::vector<Busy>> busy(ipus);
  std::vector<std::set<int64_t>> hasTask(ipus);
  std::vector<std::vector<CycleInterval>> hostWaits(ipus), streamingWaits(ipus);
  for (const TraceEvent& event : trace.events) {
    const auto ipu = static_cast<size_t>(event.ipu);
    const uint64_t cycles = event.end - event.start;
    const bool task = isTaskKind(event.kind);
    const TimePart part = event.kind == "streaming" ? TimePart::StreamingMemory
                          : event.kind == "copy"    ? TimePart::InterIpuCopies
                                                    : TimePart::HostIo;
    if (!trace.occupiesIpu(event)) { // a transfer beside the compute
      if (part == TimePart::HostIo) hostWaits[ipu].emplace_back(event.start, event.end);
      if (part == TimePart::StreamingMemory) {
        streamingWaits[ipu].emplace_back(event.start, event.end);
      }
      continue;
    }
    busy[ipu].push_back({event.cycle, event.start, event.end});
    if (task) {
      hasTask[ipu].insert(event.cycle);
      const auto found = parts.find({event.ipu, event.task});
      split(cycles, found != parts.end() ? &found->second : nullptr, times[ipu]);
    } else {
      times[ipu][index(part)] += cycles;
    }
  }
  // Outside every pipeline cycle: a step or the call waiting for its last
  // outputs or stores to leave (the same for every IPU).
  uint64_t inCycles = 0;
  for (const auto& [start, end] : cycleSpans)
    inCycles += end - start;
  const uint64_t outside = trace.totalCycles - inCycles;
  for (size_t ipu = 0; ipu < ipus; ++ipu) {
    TimeCycles& time = times[ipu];
    std::map<int64_t, std::vector<CycleInterval>> byCycle;
    for (const Busy& b : busy[ipu])
      byCycle[b.cycle].emplace_back(b.start, b.end);
    std::vector<CycleInterval> gaps;
    for (size_t cycle = 0; cycle < cycleSpans.size(); ++cycle) {
      const auto [start, end] = cycleSpans[cycle];
      const uint64_t sync = std::min(syncCycles, end - start);
      time[index(TimePart::Syncs)] += sync;
      const auto at = static_cast<int64_t>(cycle);
      if (hasTask[ipu].count(at) == 0) {
        uint64_t transfers = 0;
        for (const auto& [s, e] : byCycle[at])
          transfers += e - s;
        time[index(TimePart::PipelineFillAndDrain)] += end - start - sync - transfers;
        continue;
      }
      appendGaps({start, end - sync}, merged(byCycle[at]), gaps);
    }
    uint64_t waiting = 0;
    for (const auto& [start, end] : gaps)
      waiting += end - start;
    const uint64_t host = overlap(gaps, merged(hostWaits[ipu]));
    const uint64_t streaming = std::min(waiting - host, overlap(gaps, merged(streamingWaits[ipu])));
    time[index(TimePart::HostIo)] += host + outside;
    time[index(TimePart::StreamingMemory)] += streaming;
    time[index(TimePart::WaitingForOtherIpus)] += waiting - host - streaming;
  }
  return times;
}

} // namespace popsim::profile
