#include "profile/profile_summary.h"

#include "common/strings.h"
#include "profile/chrome_trace.h"
#include "profile/profile_analysis.h"
#include "profile/sizing_report.h"
#include "profile/text_format.h"

#include <algorithm>
#include <map>

namespace popsim::profile {
namespace {

std::string overviewLine(const ProfileContent& profile) {
  std::vector<std::string> parts;
  if (profile.memory != nullptr) parts.push_back(profile.memory->at("chip").get<std::string>());
  parts.push_back(std::to_string(profileIpus(profile)) + " IPU(s)");
  if (const CallTrace* trace = profile.trace) {
    parts.push_back(trace->pipeline.schedule + " schedule, " +
                    std::to_string(trace->pipeline.stages) + " stage(s)");
    parts.push_back(grouped(static_cast<long long>(trace->totalCycles)) +
                    " cycles = " + fixed(trace->seconds() * 1e3, 3) + " ms simulated per call");
  }
  if (profile.host != nullptr && !profile.host->empty()) {
    parts.push_back("host wall time " +
                    fixed(profile.host->at("wall_seconds").get<double>() * 1e3, 3) + " ms (call " +
                    std::to_string(profile.host->at("calls").get<int64_t>()) + ")");
  }
  return join(parts, ", ");
}

// What replicas add: their count and each IPU's share of the call spent in
// collectives across them (the gradients' reduction, gathers of sharded weights).
std::vector<std::string> replicationLines(const ProfileContent& profile) {
  const Json* replication = profile.replication;
  if (replication == nullptr || replication->empty() ||
      replication->at("replicas").get<int64_t>() <= 1) {
    return {};
  }
  std::vector<std::string> lines = {
      "Replicas: " + std::to_string(replication->at("replicas").get<int64_t>()) +
      ", each on IPUs of its own running this program (the trace and memory are replica 0's)."};
  const Json& cycles = replication->at("collective_cycles");
  if (!cycles.empty() && profile.trace != nullptr) {
    std::map<int64_t, uint64_t> byIpu;
    for (const auto& [ipu, count] : cycles.items())
      byIpu[std::stoll(ipu)] = count.get<uint64_t>();
    std::vector<std::string> shares;
    for (const auto& [ipu, count] : byIpu) {
      shares.push_back(
          "IPU" + std::to_string(ipu) + " " + grouped(static_cast<long long>(count)) + " cycles (" +
          percent(static_cast<double>(count) / static_cast<double>(profile.trace->totalCycles), 1) +
          ")");
    }
    lines.push_back("Collectives across replicas (reducing gradients, gathering sharded "
                    "weights) per call: " +
                    join(shares, ", ") + ".");
  }
  lines.emplace_back();
  return lines;
}

void append(std::vector<std::string>& lines, const std::vector<std::string>& more) {
  lines.insert(lines.end(), more.begin(), more.end());
}

} // namespace

int64_t profileIpus(const ProfileContent& profile) {
  if (profile.trace != nullptr) return profile.trace->numIpus();
  return profile.memory != nullptr ? static_cast<int64_t>(profile.memory->at("ipus").size()) : 0;
}

std::vector<std::string> summaryLines(const ProfileContent& profile) {
  const Analysis analysis = analyse(profile.trace, profile.stages, profile.memory);
  std::vector<std::string> lines = {
      "popsim profile of " + profile.model + " (" + profile.kind + ")" +
          (profile.directory.empty() ? "" : " in " + profile.directory),
      overviewLine(profile), ""};
  append(lines, replicationLines(profile));
  std::map<int64_t, const IpuMemoryLoad*> memoryOf;
  for (const IpuMemoryLoad& memory : analysis.memory)
    memoryOf[memory.ipu] = &memory;
  std::vector<std::vector<std::string>> rows;
  for (int64_t ipu = 0; ipu < profileIpus(profile); ++ipu) {
    const IpuLoad* load =
        static_cast<size_t>(ipu) < analysis.ipus.size() ? &analysis.ipus[ipu] : nullptr;
    const auto found = memoryOf.find(ipu);
    const IpuMemoryLoad* memory = found != memoryOf.end() ? found->second : nullptr;
    rows.push_back(
        {std::to_string(ipu), load ? percent(load->busyFraction, 1) : "-",
         load ? percent(load->computeFraction, 1) : "-",
         load ? percent(load->idleFraction, 1) : "-",
         memory ? mib(static_cast<double>(memory->total)) : "-",
         memory ? percent(memory->fraction(), 1) + " of " + mib(static_cast<double>(memory->limit))
                : "-"});
  }
  append(lines, table({"IPU", "busy", "ops", "idle", "memory", "of limit"}, rows));
  if (!analysis.ipus.empty()) {
    // (The breakdown below splits ops into compute, exchange and syncs.)
    lines.emplace_back("ops: the program's compute, exchange and syncs; busy adds host I/O and "
                       "inter-IPU copies.");
    lines.push_back("Idle (bubble) fraction over all IPUs: " + percent(analysis.idleFraction(), 1));
  } else {
    lines.emplace_back("No call yet: run the model to profile its execution.");
  }
  if (!analysis.stages.empty()) {
    const double slowest = std::max(analysis.bottleneck()->cycles, 0.0);
    const double denominator = slowest != 0 ? slowest : 1;
    lines.emplace_back();
    lines.emplace_back("Stage balance (median cycles per micro-batch, transfers included):");
    rows.clear();
    for (const StageLoad& stage : analysis.stages) {
      rows.push_back({std::to_string(stage.stage), std::to_string(stage.ipu),
                      stage.blocks.empty() ? "-" : join(stage.blocks, ", "),
                      groupedFixed(stage.cycles, 0), groupedFixed(stage.computeCycles, 0),
                      groupedFixed(stage.hostCycles, 0), groupedFixed(stage.copyCycles, 0),
                      percent(stage.cycles / denominator, 1)});
    }
    append(lines,
           table({"stage", "IPU", "blocks", "cycles", "ops", "host I/O", "copies", "of slowest"},
                 rows));
  }
  if (profile.sizing != nullptr && !profile.sizing->is_null()) {
    const SizingReport report = sizingReportFromJson(*profile.sizing);
    const std::vector<std::string> overview = report.overviewLines();
    lines.emplace_back();
    lines.insert(lines.end(), overview.begin() + 1, overview.begin() + 4);
    lines.emplace_back();
    append(lines, report.timeLines());
  }
  const bool pipelined =
      profile.trace != nullptr && profile.trace->pipeline.schedule != "Sequential";
  const std::vector<std::string> tips = advice(analysis, pipelined);
  if (!tips.empty()) {
    lines.emplace_back();
    lines.emplace_back("Advice:");
    for (const std::string& tip : tips)
      lines.push_back("- " + tip);
  }
  return lines;
}

std::vector<std::string> summaryOfFiles(const std::string& directory,
                                        const std::optional<std::string>& traceText,
                                        const std::optional<std::string>& memoryText) {
  const Json document = traceText ? Json::parse(*traceText) : Json();
  const Json memory = memoryText ? Json::parse(*memoryText) : Json();
  std::optional<CallTrace> call;
  ProfileContent content;
  content.directory = directory;
  const Json* meta = nullptr;
  if (traceText) {
    call = callTraceFromDocument(document);
    content.trace = &*call;
    meta = &document.at("popsim");
  }
  // The model and its kind: the trace's, else the memory report's, else "?".
  const auto named = [&](const char* key) {
    if (meta != nullptr && meta->contains(key) && !meta->at(key).get<std::string>().empty()) {
      return meta->at(key).get<std::string>();
    }
    return memoryText ? memory.value(key, std::string("?")) : std::string("?");
  };
  content.model = named("model");
  content.kind = named("kind");
  if (meta != nullptr) {
    if (meta->contains("stages")) content.stages = stagesFromJson(meta->at("stages"));
    if (meta->contains("host")) content.host = &meta->at("host");
    if (meta->contains("replication")) content.replication = &meta->at("replication");
    if (meta->contains("sizing")) content.sizing = &meta->at("sizing");
  }
  if (memoryText) content.memory = &memory;
  return summaryLines(content);
}

} // namespace popsim::profile
