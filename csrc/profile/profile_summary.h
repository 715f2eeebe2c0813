#pragma once

#include "profile/call_trace.h"
#include "profile/json.h"
#include "profile/pipeline_stages.h"

#include <optional>
#include <string>
#include <vector>

namespace popsim::profile {

// What a profile holds, as its files give it back: every part but the model
// is optional (a model that has compiled but not run has no trace yet).
struct ProfileContent {
  std::string model;
  std::string kind;
  std::string directory;
  const CallTrace* trace = nullptr;
  std::vector<StageBlocks> stages;
  const Json* memory = nullptr;      // memory.json
  const Json* host = nullptr;        // calls and the last call's wall_seconds
  const Json* replication = nullptr; // replicas and collective cycles per IPU
  const Json* sizing = nullptr;      // SizingReport::toJson()
};

// The IPUs of a profile: its trace's, else its memory report's.
int64_t profileIpus(const ProfileContent& profile);

// The text summary of a profile, as `python -m popsim.profiling DIR` prints
// it and report.html shows it: the overview, each IPU's busy, compute and idle
// shares and memory, the stages' balance, the sizing and advice.
std::vector<std::string> summaryLines(const ProfileContent& profile);

// The summary of a profile directory's files, from their text (none: the
// file is missing): trace.json and memory.json. Throws Json::exception for
// files that are JSON but not a popsim profile's.
std::vector<std::string> summaryOfFiles(const std::string& directory,
                                        const std::optional<std::string>& traceText,
                                        const std::optional<std::string>& memoryText);

} // namespace popsim::profile
