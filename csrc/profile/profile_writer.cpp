#include "profile/profile_writer.h"

#include "common/safe_files.h"
#include "common/strings.h"
#include "profile/call_trace.h"
#include "profile/chrome_trace.h"
#include "profile/memory_document.h"
#include "profile/profile_summary.h"
#include "profile/records_json.h"
#include "profile/report_page.h"
#include "profile/text_format.h"
#include "runtime/executable.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <unistd.h>

namespace popsim::profile {
namespace {

namespace fs = std::filesystem;

constexpr int kTraceFormatVersion = 1;

void writeAtomically(const std::string& path, const std::string& text) {
  writeFileAtomically(path, text);
}

} // namespace

std::string claimModelDirectory(const std::string& root, const std::string& kind,
                                const std::string& modelName) {
  // (real path of the root, name) -> models of that name given a directory
  static std::map<std::pair<std::string, std::string>, int64_t> claimed;
  static std::mutex lock;
  const std::string base = modelName.empty() ? kind : modelName;
  const std::string key = fs::weakly_canonical(fs::absolute(root)).string();
  int64_t index = 0;
  {
    std::lock_guard<std::mutex> guard(lock);
    index = claimed[{key, base}]++;
  }
  const std::string name = index == 0 ? base : base + "_" + std::to_string(index);
  const fs::path directory = fs::path(root) / name;
  fs::create_directories(directory);
  // A directory of this name that another user made (or can write) first
  // would receive the reports, or have them replaced: refused.
  if (const auto problem = sharedDirectoryProblem(directory.string())) {
    throw fs::filesystem_error("popsim does not write profiles into a directory that " + *problem,
                               directory, std::make_error_code(std::errc::permission_denied));
  }
  return directory.string();
}

Json replicationMeta(const runtime::Executable& executable, const CallTrace& trace,
                     int64_t replicas) {
  // Per IPU (in program order), per task: the cycles of its collectives.
  std::vector<std::pair<int64_t, std::map<std::string, uint64_t>>> perRun;
  for (const runtime::ProgramStep& step : executable.program()) {
    if (!startsWith(step.op, "replica_")) continue;
    auto found = std::find_if(perRun.begin(), perRun.end(),
                              [&](const auto& entry) { return entry.first == step.ipu; });
    if (found == perRun.end()) found = perRun.insert(perRun.end(), {step.ipu, {}});
    found->second[step.task] += step.cycles;
  }
  std::map<std::pair<int64_t, std::string>, std::set<std::pair<int64_t, int64_t>>> runs;
  for (const TraceEvent& event : trace.events) {
    runs[{event.ipu, event.task}].insert({event.step, event.microBatch});
  }
  Json cycles = Json::object();
  for (const auto& [ipu, tasks] : perRun) {
    uint64_t total = 0;
    for (const auto& [task, count] : tasks) {
      const auto found = runs.find({ipu, task});
      total += count * (found != runs.end() ? found->second.size() : 0);
    }
    cycles[std::to_string(ipu)] = total;
  }
  return {{"replicas", replicas}, {"collective_cycles", cycles}};
}

ProfileWriter::ProfileWriter(std::string root, const std::string& kind,
                             const std::string& modelName)
    : root_(std::move(root)), kind_(kind), directory_(claimModelDirectory(root_, kind, modelName)) {
}

std::string ProfileWriter::path(const char* name) const {
  return (fs::path(directory_) / name).string();
}

std::string ProfileWriter::pageJson(const Compiled& compiled, const CallTrace* trace) const {
  ProfileContent content;
  content.model = compiled.model;
  content.kind = kind_;
  content.directory = directory_;
  content.trace = trace;
  content.stages = compiled.stages;
  content.memory = &compiled.memory;
  if (!compiled.meta.is_null()) {
    content.replication = &compiled.meta.at("replication");
    if (compiled.meta.contains("sizing")) content.sizing = &compiled.meta.at("sizing");
  }
  return pageData(compiled.model, kind_, compiled.memory, trace, join(summaryLines(content), "\n"));
}

void ProfileWriter::afterCompile(const runtime::Executable& executable, const std::string& model,
                                 std::vector<StageBlocks> stages, double compileSeconds,
                                 int64_t replicas) {
  Compiled compiled;
  compiled.model = model;
  compiled.stages = std::move(stages);
  compiled.compileSeconds = compileSeconds;
  compiled.replicas = replicas;
  compiled.memory = memoryDocument(executable, model, kind_);
  compiled_ = std::move(compiled);
  writeAtomically(path(kMemoryFile), jsonText(compiled_->memory, 1));
  const auto [before, after] = reportParts(model, pageJson(*compiled_, nullptr), planSection_);
  writeAtomically(path(kReportFile), before + hostData({{"calls", 0}}) + after);
}

void ProfileWriter::afterCall(const runtime::Executable& executable, double wallSeconds,
                              const std::optional<SizingJob>& job) {
  if (!compiled_) throw std::logic_error("ProfileWriter::afterCall() before afterCompile()");
  Compiled& compiled = *compiled_;
  if (!compiled.traceBody) {
    const CallTrace trace = callTraceOf(executable);
    compiled.traceBody = simulatedEvents(trace, executable.program(), compiled.stages);
    compiled.meta = {{"format", "popsim-trace"},
                     {"version", kTraceFormatVersion},
                     {"model", compiled.model},
                     {"kind", kind_},
                     {"clock_hz", trace.clockHz},
                     {"total_cycles", trace.totalCycles},
                     {"pipeline", toJson(trace.pipeline)},
                     {"stages", toJson(compiled.stages)},
                     {"compile_seconds", compiled.compileSeconds},
                     {"replication", replicationMeta(executable, trace, compiled.replicas)}};
    if (job) {
      compiled.meta["sizing"] =
          toJson(sizingReport(executable, *job, compiled.stages, trace, compiled.memory));
    }
    compiled.report = reportParts(compiled.model, pageJson(compiled, &trace), planSection_);
  }
  ++calls_;
  const double simulated = static_cast<double>(compiled.meta.at("total_cycles").get<uint64_t>()) /
                           compiled.meta.at("clock_hz").get<double>();
  Json meta = compiled.meta;
  meta["host"] = {{"calls", calls_}, {"wall_seconds", wallSeconds}};
  writeAtomically(path(kTraceFile), traceDocument(*compiled.traceBody,
                                                  hostEvents(calls_, wallSeconds, simulated,
                                                             executable.lastTaskWallTimes()),
                                                  meta));
  writeAtomically(path(kReportFile),
                  compiled.report.first +
                      hostData({{"calls", calls_}, {"wall_ms", wallSeconds * 1e3}}) +
                      compiled.report.second);
}

} // namespace popsim::profile
