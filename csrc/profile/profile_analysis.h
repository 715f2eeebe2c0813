#pragma once

#include "profile/call_trace.h"
#include "profile/json.h"
#include "profile/pipeline_stages.h"

#include <optional>
#include <string>
#include <vector>

// What a profile says: utilisation and idle time per IPU, the load of each
// pipeline stage, memory headroom, and the advice that follows.
//
// A stage's load is the median, over the call's micro-batches, of the cycles
// its tasks (F<s>, B<s>, FB<s>) spend on one micro-batch, their incoming
// copies and the host transfers that occupy its IPU included. The median
// leaves out one-off transfers such as the final output. With prefetching,
// inputs stream on each IPU's host link beside the IPU, and the link is a
// stage of its own. In a pipeline every cycle waits for the slowest stage, so
// the stage or link with the largest load is the bottleneck.
namespace popsim::profile {

struct StageLoad {
  int64_t stage = 0;
  int64_t ipu = 0;
  std::vector<std::string> blocks;
  double cycles = 0; // per micro-batch: compute + copies + host transfers
  double computeCycles = 0;
  double hostCycles = 0;   // streaming inputs and outputs from and to the host
  double copyCycles = 0;   // inter-IPU copies received
  double outputCycles = 0; // the outputs' share of hostCycles
};

struct IpuLoad {
  int64_t ipu = 0;
  double busyFraction = 0;    // share of the call spent on its tasks and transfers
  double computeFraction = 0; // share spent computing
  double idleFraction = 0;    // share spent waiting for other IPUs
};

struct HostLinkLoad {
  int64_t ipu = 0;
  double cycles = 0; // per micro-batch: streaming its inputs in, beside the IPU
};

struct IpuMemoryLoad {
  int64_t ipu = 0;
  uint64_t total = 0;
  uint64_t limit = 0;
  std::string largestCategory;
  // availableMemoryProportion's budget for one op's temporaries, and the ops
  // it splits into serial passes (memory.json's "split_ops").
  uint64_t temporaryBudget = 0;
  Json splitOps = Json::array();
  double fraction() const {
    return limit != 0 ? static_cast<double>(total) / static_cast<double>(limit) : 0.0;
  }
};

struct Analysis {
  std::vector<StageLoad> stages;
  std::vector<IpuLoad> ipus;
  std::vector<IpuMemoryLoad> memory;
  std::vector<HostLinkLoad> hostLinks;     // prefetching links that carry inputs
  int64_t replicasPerHostThread = 1;       // replicas taking turns on each host thread
  bool hostExchangesStallEveryIpu = false; // SyncPattern.Full (PipelineInfo)

  const HostLinkLoad* slowestLink() const;
  const StageLoad* bottleneck() const;
  const StageLoad* fastest() const;
  // Whether a host link is slower than every stage.
  bool linkBound() const;
  // Share of the IPUs' time spent waiting, over all IPUs.
  double idleFraction() const;
  const IpuMemoryLoad* tightestMemory() const;
};

// The stage number of a stage task ("F2", "B0", "FB3"); none for updates.
std::optional<int64_t> stageOfTask(const std::string& task);

std::vector<StageLoad> stageLoads(const CallTrace& trace, const std::vector<StageBlocks>& stages);

// An analysis of a call (`trace` is null before the first call) and of
// memory.json's content (null without it).
Analysis analyse(const CallTrace* trace, const std::vector<StageBlocks>& stages,
                 const Json* memory);

// The advice that follows from an analysis, most important first.
// `pipelined` is false for sharded (sequential) execution, where stages take turns.
std::vector<std::string> advice(const Analysis& analysis, bool pipelined);

// {category: bytes} of one IPU of memory.json, always-live categories first.
Json categoriesOf(const Json& ipu);

} // namespace popsim::profile
