#pragma once

#include "profile/json.h"
#include "profile/pipeline_stages.h"
#include "profile/sizing_report.h"

#include <optional>
#include <string>
#include <utility>

namespace popsim::runtime {
class Executable;
}

// Writes a model's profile files while it compiles and runs, into a
// directory of its own under the profile root: after compiling, memory.json
// and report.html with the memory alone; after each call, trace.json and
// report.html. Every call of a compiled program runs the same schedule on
// the simulated clock, so the simulated part of both files is built once per
// compilation and kept as text; a call adds its measured host wall time.
// Files are replaced atomically, so a reader never sees half a file.
namespace popsim::profile {

constexpr const char* kTraceFile = "trace.json";
constexpr const char* kMemoryFile = "memory.json";
constexpr const char* kReportFile = "report.html";

// The next free directory under `root` for a model of `kind` ("training" or
// "inference"), named after `modelName` if it is not empty, created. The
// first model of a name in the process gets ROOT/name, the next
// ROOT/name_1, and so on; a new process starts counting again, so that
// re-running a script overwrites its last profile. Throws
// std::filesystem::filesystem_error if it cannot be created.
std::string claimModelDirectory(const std::string& root, const std::string& kind,
                                const std::string& modelName);

class ProfileWriter {
public:
  ProfileWriter(std::string root, const std::string& kind, const std::string& modelName);

  const std::string& root() const { return root_; }
  const std::string& directory() const { return directory_; }

  // After compiling `executable` (whose blocks run as `stages`): memory.json
  // and report.html with the memory alone.
  void afterCompile(const runtime::Executable& executable, const std::string& model,
                    std::vector<StageBlocks> stages, double compileSeconds, int64_t replicas);
  // The HTML section report.html shows after its summary from now on: the job
  // plan (popsim.planJob) whose options the model runs with, drawn by popsim.
  void setPlanSection(std::string html) { planSection_ = std::move(html); }
  // After a call that took `wallSeconds` on the host: trace.json and
  // report.html, with the sizing report of `job` (none: no report). Every
  // call of a compilation is alike, so the report is made at its first call.
  void afterCall(const runtime::Executable& executable, double wallSeconds,
                 const std::optional<SizingJob>& job);

private:
  struct Compiled {
    std::string model;
    std::vector<StageBlocks> stages;
    double compileSeconds = 0;
    int64_t replicas = 1;
    Json memory;
    // Built at the first call:
    std::optional<std::string> traceBody;
    Json meta;
    std::pair<std::string, std::string> report; // report.html around the host's numbers
  };

  std::string path(const char* name) const;
  std::string pageJson(const Compiled& compiled, const CallTrace* trace) const;

  std::string root_;
  std::string kind_;
  std::string directory_;
  std::string planSection_;
  std::optional<Compiled> compiled_;
  int64_t calls_ = 0; // the model's calls, counted across recompilations
};

// The job's replica count and, per IPU, the cycles a call spends in
// collectives across replicas: the gradients' (once per step) and the
// gathers of sharded weights (in each task that reads one, per micro-batch).
Json replicationMeta(const runtime::Executable& executable, const CallTrace& trace,
                     int64_t replicas);

} // namespace popsim::profile
