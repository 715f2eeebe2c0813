#include "profile/sizing_report.h"

#include "common/strings.h"
#include "profile/call_trace.h"
#include "profile/memory_document.h"
#include "profile/profile_analysis.h"
#include "profile/text_format.h"
#include "runtime/executable.h"

#include <algorithm>
#include <map>

namespace popsim::profile {
namespace {

// What to change for an IPU whose program does not fit, by what fills it;
// `pipelined`: a replica of several IPUs, whose stages recompute their
// forward passes under Training.recomputation(True) alone (one IPU recomputes
// only between recomputation checkpoints).
std::string memoryAdvice(const IpuSizing& ipu, const std::string& chip, bool pipelined) {
  const uint64_t over = ipu.memoryBytes - ipu.capacityBytes;
  std::string largest;
  uint64_t largestBytes = 0;
  for (const auto& [name, bytes] : ipu.memoryByCategory) {
    if (largest.empty() || bytes > largestBytes) {
      largest = name;
      largestBytes = bytes;
    }
  }
  const std::string id = std::to_string(ipu.ipu);
  const std::map<std::string, std::string> remedies = {
      {"activations",
       pipelined ? "a smaller micro-batch, recomputation (Options.Training.recomputation(True) "
                   "or popsim.recomputationCheckpoint), or more pipeline stages"
                 : "a smaller micro-batch, " + std::string(kOneIpuCheckpoints) +
                       "or more IPUs per replica (popsim.Block and an execution strategy)"},
      {"stash", "recomputation checkpoints (fewer stashed activations), fewer pipeline stages in "
                "flight, or a smaller micro-batch"},
      {"optimizer state",
       "optimizer state in Streaming Memory (Options.TensorLocations.setOptimizerLocation("
       "popsim.TensorLocationSettings().useOnChipStorage(False))) or sharded over replicas "
       "(.useReplicatedTensorSharding(True))"},
      {"gradient accumulators", "an optimizer that combines them with its state (SGD with "
                                "momentum, accum_type float16) or more IPUs per replica"},
      {"weights", "more IPUs per replica (popsim.Block and an execution strategy)"},
      {"code", "fewer distinct ops per IPU (more IPUs per replica)"},
      {"temporaries", "a lower availableMemoryProportion for IPU" + id +
                          " (Options.setAvailableMemoryProportion)"},
  };
  const auto remedy = remedies.find(largest);
  return "IPU " + id + " does not fit: it needs " + mib(static_cast<double>(over)) +
         " more than its " + mib(static_cast<double>(ipu.capacityBytes)) + " (" + chip +
         "), mostly " + largest + " (" + mib(static_cast<double>(largestBytes)) + "). Try " +
         (remedy != remedies.end() ? remedy->second
                                   : "a smaller micro-batch or more IPUs per replica") +
         ".";
}

} // namespace
} // namespace popsim::profile

namespace popsim {

using profile::general;
using profile::grouped;
using profile::groupedFixed;
using profile::mib;
using profile::percent;

bool SizingReport::fits() const {
  return std::all_of(ipus.begin(), ipus.end(), [](const IpuSizing& ipu) { return ipu.fits(); });
}

double SizingReport::callSeconds() const { return static_cast<double>(callCycles) / clockHz; }

double SizingReport::stepCycles() const {
  return static_cast<double>(callCycles) / static_cast<double>(stepsPerCall);
}

double SizingReport::stepSeconds() const { return stepCycles() / clockHz; }

double SizingReport::throughput() const {
  return callCycles != 0 ? static_cast<double>(itemsPerCall) / callSeconds() : 0.0;
}

std::vector<std::string> SizingReport::overviewLines() const {
  const std::string how = costOnly ? "cost-only: nothing was computed" : "from a computing run";
  const std::string perCall =
      stepsPerCall > 1 ? std::to_string(stepsPerCall) + " steps of " : "a step of ";
  const std::string inProcesses =
      processes > 1 ? " in " + std::to_string(processes) + " processes" : "";
  const std::string turns =
      replicasPerHostThread > 1
          ? ", " + std::to_string(replicasPerHostThread) + " replicas per host thread"
          : "";
  std::vector<std::string> notFitting;
  for (const IpuSizing& ipu : ipus) {
    if (!ipu.fits()) {
      notFitting.push_back("IPU " + std::to_string(ipu.ipu) + " needs " +
                           mib(static_cast<double>(ipu.memoryBytes)) + " of " +
                           mib(static_cast<double>(ipu.capacityBytes)));
    }
  }
  const double total = static_cast<double>(totalIpus());
  return {
      "Sizing of " + model + " on simulated " + chip + " IPUs (" + how + ")",
      "Job: " + std::to_string(replicas) + " replica(s) x " + std::to_string(ipusPerReplica) +
          " IPU(s) = " + std::to_string(totalIpus()) + " IPUs" + inProcesses + turns +
          "; a call is " + perCall + std::to_string(microBatchesPerStep) +
          " micro-batch(es) per replica, " + grouped(itemsPerCall) + " items over all replicas",
      "Simulated step: " + groupedFixed(stepCycles(), 0) + " cycles = " +
          groupedFixed(stepSeconds() * 1e3, 2) + " ms at " + general(clockHz / 1e9, 3) + " GHz",
      "Simulated throughput: " + groupedFixed(throughput(), 0) + " items/s over " +
          std::to_string(totalIpus()) + " IPUs (" + groupedFixed(throughput() / total, 0) +
          " per IPU)",
      "Fits: " + (fits() ? std::string("yes, on every IPU") : "NO: " + join(notFitting, ", ")),
  };
}

std::vector<std::string> SizingReport::memoryLines() const {
  std::vector<std::string> lines = {"Memory per IPU (one replica's; the largest categories):"};
  for (const IpuSizing& ipu : ipus) {
    std::vector<std::pair<uint64_t, std::string>> largest;
    for (const auto& [name, bytes] : ipu.memoryByCategory) {
      if (bytes != 0) largest.emplace_back(bytes, name);
    }
    std::sort(largest.rbegin(), largest.rend());
    if (largest.size() > 4) largest.resize(4);
    std::vector<std::string> parts;
    for (const auto& [bytes, name] : largest) {
      parts.push_back(name + " " + mib(static_cast<double>(bytes)));
    }
    const double share = ipu.capacityBytes != 0 ? static_cast<double>(ipu.memoryBytes) /
                                                      static_cast<double>(ipu.capacityBytes)
                                                : 0.0;
    lines.push_back("  IPU " + std::to_string(ipu.ipu) + ": " +
                    mib(static_cast<double>(ipu.memoryBytes)) + " of " +
                    mib(static_cast<double>(ipu.capacityBytes)) + " (" + percent(share, 0) +
                    (ipu.fits() ? "" : ", does NOT fit") + "): " + join(parts, ", "));
  }
  return lines;
}

std::vector<std::string> SizingReport::timeLines() const {
  std::vector<std::string> lines = {"Where each IPU's time goes (share of the simulated call):"};
  std::vector<size_t> parts;
  for (size_t part = 0; part < kTimeParts; ++part) {
    if (std::any_of(ipus.begin(), ipus.end(),
                    [&](const IpuSizing& ipu) { return ipu.timeCycles[part] != 0; })) {
      parts.push_back(part);
    }
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"IPU", "busy"};
  for (size_t part : parts)
    header.emplace_back(profile::timePartName(part));
  rows.push_back(header);
  for (const IpuSizing& ipu : ipus) {
    std::vector<std::string> row = {std::to_string(ipu.ipu), percent(ipu.busyShare, 0)};
    for (size_t part : parts) {
      row.push_back(callCycles != 0 ? percent(static_cast<double>(ipu.timeCycles[part]) /
                                                  static_cast<double>(callCycles),
                                              1)
                                    : "-");
    }
    rows.push_back(row);
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += "  " + std::string(widths[i] - row[i].size(), ' ') + row[i];
    }
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> SizingReport::adviceLines() const {
  if (advice.empty()) return {};
  std::vector<std::string> lines = {"", "Advice:"};
  for (const std::string& line : advice)
    lines.push_back("- " + line);
  return lines;
}

std::string SizingReport::text() const {
  std::vector<std::string> lines = overviewLines();
  lines.emplace_back();
  for (const std::string& line : memoryLines())
    lines.push_back(line);
  lines.emplace_back();
  for (const std::string& line : timeLines())
    lines.push_back(line);
  for (const std::string& line : adviceLines())
    lines.push_back(line);
  return join(lines, "\n");
}

std::ostream& operator<<(std::ostream& out, const SizingReport& report) {
  return out << report.text() << "\n";
}

} // namespace popsim

namespace popsim::profile {

Json toJson(const SizingReport& report) {
  Json ipuEntries = Json::array();
  for (const IpuSizing& ipu : report.ipus) {
    Json categories = Json::object(), time = Json::object();
    for (const auto& [name, bytes] : ipu.memoryByCategory)
      categories[name] = bytes;
    for (size_t part = 0; part < kTimeParts; ++part)
      time[timePartName(part)] = ipu.timeCycles[part];
    ipuEntries.push_back({{"ipu", ipu.ipu},
                          {"memory_bytes", ipu.memoryBytes},
                          {"capacity_bytes", ipu.capacityBytes},
                          {"memory_by_category", categories},
                          {"busy_share", ipu.busyShare},
                          {"time_cycles", time},
                          {"fits", ipu.fits()}});
  }
  return {{"model", report.model},
          {"chip", report.chip},
          {"clock_hz", report.clockHz},
          {"replicas", report.replicas},
          {"ipus_per_replica", report.ipusPerReplica},
          {"processes", report.processes},
          {"replicas_per_host_thread", report.replicasPerHostThread},
          {"steps_per_call", report.stepsPerCall},
          {"micro_batches_per_step", report.microBatchesPerStep},
          {"items_per_call", report.itemsPerCall},
          {"call_cycles", report.callCycles},
          {"cost_only", report.costOnly},
          {"ipus", ipuEntries},
          {"advice", report.advice},
          {"fits", report.fits()},
          {"call_seconds", report.callSeconds()},
          {"step_cycles", report.stepCycles()},
          {"step_seconds", report.stepSeconds()},
          {"throughput", report.throughput()},
          {"total_ipus", report.totalIpus()}};
}

SizingReport sizingReportFromJson(const Json& entry) {
  SizingReport report;
  report.model = entry.at("model").get<std::string>();
  report.chip = entry.at("chip").get<std::string>();
  report.clockHz = entry.at("clock_hz").get<double>();
  report.replicas = entry.at("replicas").get<int64_t>();
  report.ipusPerReplica = entry.at("ipus_per_replica").get<int64_t>();
  report.processes = entry.at("processes").get<int64_t>();
  // Profiles written before the turns were recorded had none.
  report.replicasPerHostThread = entry.value("replicas_per_host_thread", int64_t{1});
  report.stepsPerCall = entry.at("steps_per_call").get<int64_t>();
  report.microBatchesPerStep = entry.at("micro_batches_per_step").get<int64_t>();
  report.itemsPerCall = entry.at("items_per_call").get<int64_t>();
  report.callCycles = entry.at("call_cycles").get<uint64_t>();
  report.costOnly = entry.at("cost_only").get<bool>();
  for (const Json& item : entry.at("ipus")) {
    IpuSizing ipu;
    ipu.ipu = item.at("ipu").get<int64_t>();
    ipu.memoryBytes = item.at("memory_bytes").get<uint64_t>();
    ipu.capacityBytes = item.at("capacity_bytes").get<uint64_t>();
    for (const auto& [name, bytes] : item.at("memory_by_category").items()) {
      ipu.memoryByCategory.emplace_back(name, bytes.get<uint64_t>());
    }
    ipu.busyShare = item.at("busy_share").get<double>();
    const Json& time = item.at("time_cycles");
    for (size_t part = 0; part < kTimeParts; ++part) {
      ipu.timeCycles[part] = time.value(timePartName(part), uint64_t{0});
    }
    report.ipus.push_back(std::move(ipu));
  }
  report.advice = entry.at("advice").get<std::vector<std::string>>();
  return report;
}

SizingReport sizingReport(const runtime::Executable& executable, const SizingJob& job,
                          const std::vector<StageBlocks>& stages) {
  return sizingReport(executable, job, stages, callTraceOf(executable),
                      Json{{"ipus", memoryIpuEntries(executable)}});
}

SizingReport sizingReport(const runtime::Executable& executable, const SizingJob& job,
                          const std::vector<StageBlocks>& stages, const CallTrace& trace,
                          const Json& memoryJson) {
  const memory::MemoryReport& memory = executable.memoryReport();
  std::vector<CycleInterval> spans;
  if (!trace.events.empty()) { // a call ran
    for (const clock::CycleSpan& span : executable.simulation().call.cycleSpans) {
      spans.emplace_back(span.start, span.end);
    }
  }
  const std::vector<TimeCycles> times =
      timeBreakdown(trace, executable.program(), spans, executable.simulation().costs.syncCycles);
  SizingReport report;
  report.model = job.model;
  report.chip = memory.chip;
  report.clockHz = trace.clockHz;
  report.replicas = job.replicas;
  report.ipusPerReplica = trace.numIpus();
  report.processes = job.processes;
  report.replicasPerHostThread = trace.pipeline.replicasPerHostThread;
  report.stepsPerCall = job.stepsPerCall;
  report.microBatchesPerStep = job.microBatchesPerStep;
  report.itemsPerCall = job.itemsPerCall;
  report.callCycles = trace.totalCycles;
  report.costOnly = executable.costOnly();
  for (size_t i = 0; i < memory.ipus.size() && i < times.size(); ++i) {
    const memory::IpuMemoryReport& entry = memory.ipus[i];
    IpuSizing ipu;
    ipu.ipu = entry.ipu;
    ipu.memoryBytes = entry.total();
    ipu.capacityBytes = entry.capacity;
    for (const memory::MemoryCategory& category : entry.categories) {
      ipu.memoryByCategory.emplace_back(category.name, category.bytes);
    }
    ipu.busyShare = trace.utilisation(entry.ipu);
    ipu.timeCycles = times[i];
    report.ipus.push_back(std::move(ipu));
  }
  for (const IpuSizing& ipu : report.ipus) {
    if (!ipu.fits())
      report.advice.push_back(memoryAdvice(ipu, memory.chip, report.ipusPerReplica > 1));
  }
  for (std::string& line :
       advice(analyse(&trace, stages, &memoryJson), trace.pipeline.schedule != "Sequential")) {
    report.advice.push_back(std::move(line));
  }
  return report;
}

} // namespace popsim::profile
