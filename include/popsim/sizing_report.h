#pragma once

// The sizing report: what a job needs and how long it takes on the simulated
// IPUs, from one call (Python's popsim.SizingReport). Every figure comes from
// popsim's memory plan and simulated clock; none is measured on the host. A
// replicated job's replicas run the same program on their own IPUs, so one
// replica's IPUs stand for all of them; throughput counts every replica.

#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace popsim {

/// Where an IPU's time goes during a call; the parts add up to the call's
/// cycles on every IPU.
enum class TimePart {
  Compute,
  Exchange,
  Syncs,
  Collectives,          ///< across replicas
  Recomputation,        ///< forward ops run again in the backward pass
  InterIpuCopies,       ///< between pipeline stages
  HostIo,               ///< inputs and outputs to and from the host
  StreamingMemory,      ///< off-chip tensors
  PipelineFillAndDrain, ///< pipeline cycles in which the IPU has no task
  WaitingForOtherIpus,  ///< stages of unequal length
};
constexpr std::size_t kTimeParts = 10;
/// "compute", "exchange", ..., "waiting for other IPUs", as reports print them.
const char* timePartName(TimePart part);

/// One IPU of one replica: its memory and where its time goes.
struct IpuSizing {
  int64_t ipu = 0;
  uint64_t memoryBytes = 0;   ///< what the program needs, by the memory plan
  uint64_t capacityBytes = 0; ///< what the IPU holds for it
  std::vector<std::pair<std::string, uint64_t>> memoryByCategory;
  double busyShare = 0;                          ///< of the call, on its tasks and transfers
  std::array<uint64_t, kTimeParts> timeCycles{}; ///< by TimePart
  bool fits() const { return memoryBytes <= capacityBytes; }
  uint64_t cycles(TimePart part) const { return timeCycles[static_cast<std::size_t>(part)]; }
};

struct SizingReport {
  std::string model; ///< the model's class name
  std::string chip;  ///< "Mk2 (GC200)"
  double clockHz = 0;
  int64_t replicas = 1; ///< of the whole job
  int64_t ipusPerReplica = 1;
  int64_t processes = 1;
  /// Replicas that take turns for their host transfers on each host thread of
  /// a process: its replicationFactor unless Poplar's engine options give
  /// stream callbacks more threads.
  int64_t replicasPerHostThread = 1;
  int64_t stepsPerCall = 1;        ///< device iterations
  int64_t microBatchesPerStep = 1; ///< gradient accumulation; 1 for inference
  int64_t itemsPerCall = 0;        ///< over all replicas and processes
  uint64_t callCycles = 0;
  bool costOnly = false; ///< whether the call computed nothing
  std::vector<IpuSizing> ipus;
  std::vector<std::string> advice; ///< what to change, the most important first

  bool fits() const;
  double callSeconds() const;
  double stepCycles() const;
  double stepSeconds() const;
  double throughput() const; ///< simulated items per second over all replicas
  int64_t totalIpus() const { return replicas * ipusPerReplica; }

  /// The printout's parts: the overview (model and chip; job; step;
  /// throughput; fits), memory per IPU, where each IPU's time goes, advice.
  std::vector<std::string> overviewLines() const;
  std::vector<std::string> memoryLines() const;
  std::vector<std::string> timeLines() const;
  std::vector<std::string> adviceLines() const;
  /// The whole printout, as Python's str(report).
  std::string text() const;
};

std::ostream& operator<<(std::ostream& out, const SizingReport& report);

} // namespace popsim
