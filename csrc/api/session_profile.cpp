#include "api/session_profile.h"

#include "api/error_classes.h"
#include "common/error.h"
#include "runtime/executable.h"

#include <cstdlib>
#include <filesystem>

namespace popsim::api {
namespace {

constexpr const char* kProfileVariable = "POPSIM_PROFILE_DIR";

} // namespace

std::string checkedProfileDirectory(const std::string& source, const std::string& directory) {
  if (directory.find_first_not_of(" \t\n\r") == std::string::npos) {
    api::refuseOption(source, source + " expects a directory path (a non-empty string), got '" +
                                  directory + "'.");
  }
  std::error_code error;
  if (std::filesystem::exists(directory, error) &&
      !std::filesystem::is_directory(directory, error)) {
    api::refuseOption(source, source + " expects a directory, but '" + directory +
                                  "' is a file. Pass a new or existing directory; popsim creates "
                                  "it when a model compiles.");
  }
  return directory;
}

SessionProfile::SessionProfile(const Options& options, bool training)
    : options_(options), training_(training), root_(options.profileDirectory()),
      source_("enableProfiling") {
  const char* variable = std::getenv(kProfileVariable);
  if (root_.empty() && variable != nullptr &&
      std::string(variable).find_first_not_of(" \t\n\r") != std::string::npos) {
    source_ = kProfileVariable;
    root_ = checkedProfileDirectory(source_, variable);
  }
}

void SessionProfile::compiled(const runtime::Executable& executable, const std::string& model,
                              const std::vector<profile::StageBlocks>& stages,
                              double compileSeconds, int64_t replicas) {
  if (root_.empty()) return;
  try {
    writer_ = std::make_unique<profile::ProfileWriter>(root_, training_ ? "training" : "inference",
                                                       options_.modelName());
  } catch (const std::filesystem::filesystem_error& error) {
    api::refuseOption(source_, source_ + ": cannot create the profile directory under '" + root_ +
                                   "': " + error.what() + ".");
  }
  writer_->afterCompile(executable, model, stages, compileSeconds, replicas);
}

void SessionProfile::called(const runtime::Executable& executable, double wallSeconds,
                            const profile::SizingJob& job) {
  if (!writer_) return;
  writer_->afterCall(executable, wallSeconds, job);
}

} // namespace popsim::api
