#pragma once

#include "popsim/options.h"
#include "profile/profile_writer.h"

#include <memory>
#include <string>

namespace popsim::runtime {
class Executable;
}

namespace popsim::api {

// `directory` if it can be a profile directory (not empty, not a file);
// otherwise an OptionError naming `source`, the option or variable.
std::string checkedProfileDirectory(const std::string& source, const std::string& directory);

// A session's profile, as Python's executor writes one: where
// Options::enableProfiling (else POPSIM_PROFILE_DIR) says, nowhere without
// either. The profile writer (csrc/profile) is the one Python uses, so the
// files are alike.
class SessionProfile {
public:
  // Throws OptionError, before anything compiles, when POPSIM_PROFILE_DIR
  // names no possible directory.
  SessionProfile(const Options& options, bool training);
  // After compiling the model of class `model`, whose blocks run as
  // `stages`: memory.json and report.html.
  void compiled(const runtime::Executable& executable, const std::string& model,
                const std::vector<profile::StageBlocks>& stages, double compileSeconds,
                int64_t replicas);
  // After a call that took `wallSeconds` on the host: trace.json, with the
  // sizing report of `job`, and report.html.
  void called(const runtime::Executable& executable, double wallSeconds,
              const profile::SizingJob& job);
  // The session's profile directory; empty when it writes none.
  std::string directory() const { return writer_ ? writer_->directory() : std::string(); }

private:
  const Options& options_;
  bool training_;
  std::string root_;   // the profile directory; empty: no profile
  std::string source_; // the option or variable that named it, for errors
  std::unique_ptr<profile::ProfileWriter> writer_;
};

} // namespace popsim::api
