#pragma once

#include "profile/json.h"
#include "profile/pipeline_stages.h"
#include "profile/time_breakdown.h"

#include <string>
#include <vector>

namespace popsim::runtime {
class Executable;
}

// The sizing report: what a job needs and how long it takes on the simulated
// IPUs, from a compiled program and its last call (usually a cost-only one).
// Every figure comes from the memory plan and the simulated clock; none is
// measured on the host. A replicated job's replicas run the same program on
// their own IPUs, so one replica's IPUs stand for all of them; throughput
// counts every replica of every process.
namespace popsim::profile {

struct IpuSizing {
  int64_t ipu = 0;
  uint64_t memoryBytes = 0;
  uint64_t capacityBytes = 0;
  std::vector<std::pair<std::string, uint64_t>> memoryByCategory;
  double busyShare = 0;
  TimeCycles timeCycles{}; // by TimePart; they add up to the call's cycles
  bool fits() const { return memoryBytes <= capacityBytes; }
};

// How the job runs a call: what the program alone does not say.
struct SizingJob {
  std::string model;
  int64_t replicas = 1; // of the whole job, every process's
  int64_t processes = 1;
  int64_t stepsPerCall = 1;        // device iterations
  int64_t microBatchesPerStep = 1; // gradient accumulation, 1 for inference
  int64_t itemsPerCall = 0;        // over all replicas and processes
};

struct SizingReport {
  std::string model;
  std::string chip;
  double clockHz = 0;
  int64_t replicas = 1;
  int64_t ipusPerReplica = 1;
  int64_t processes = 1;
  int64_t stepsPerCall = 1;
  int64_t microBatchesPerStep = 1;
  int64_t itemsPerCall = 0;
  uint64_t callCycles = 0;
  bool costOnly = false;
  std::vector<IpuSizing> ipus;
  std::vector<std::string> advice;

  bool fits() const;
  double callSeconds() const;
  double stepCycles() const;
  double stepSeconds() const;
  double throughput() const; // items per second over all replicas
  int64_t totalIpus() const { return replicas * ipusPerReplica; }

  // The printout's parts: the overview (model and chip; job; step; throughput;
  // fits), memory per IPU, where each IPU's time goes, and the advice.
  std::vector<std::string> overviewLines() const;
  std::vector<std::string> memoryLines() const;
  std::vector<std::string> timeLines() const;
  std::vector<std::string> adviceLines() const;
  std::string text() const;

  // The fields, each IPU's with "fits", and the derived figures, as
  // profiles keep them and Python's SizingReport.to_dict() gives them.
  Json toJson() const;
  static SizingReport fromJson(const Json& entry);
};

// The report of the executable's last call.
SizingReport sizingReport(const runtime::Executable& executable, const SizingJob& job,
                          const std::vector<StageBlocks>& stages);

} // namespace popsim::profile
