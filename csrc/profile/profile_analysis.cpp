#include "profile/profile_analysis.h"

#include "common/strings.h"
#include "profile/text_format.h"

#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

namespace popsim::profile {
namespace {

// Stages within this fraction of each other count as balanced.
constexpr double kBalancedWithin = 0.10;
// An IPU idle for more than this share of the call is worth an advice line.
constexpr double kIdleWorthNoting = 0.30;
// A bottleneck spending more than this share on host transfers gets advice.
constexpr double kHostBound = 0.30;
// SyncPattern.SinglePipeline is worth naming when it would shorten a
// pipeline cycle by more than this share.
constexpr double kSyncPatternGainWorthNoting = 0.10;

// The first element with the largest (or, `smallest`, the least) key.
template <typename T, typename Key>
const T* extreme(const std::vector<T>& items, Key key, bool smallest = false) {
  const T* best = nullptr;
  for (const T& item : items) {
    if (best == nullptr || (smallest ? key(item) < key(*best) : key(item) > key(*best))) {
      best = &item;
    }
  }
  return best;
}

std::vector<IpuLoad> ipuLoads(const CallTrace& trace) {
  std::vector<IpuLoad> loads;
  for (int64_t ipu = 0; ipu < trace.numIpus(); ++ipu) {
    const double busy = trace.utilisation(ipu);
    uint64_t compute = 0;
    for (const TraceEvent& event : trace.events) {
      if (event.ipu == ipu && isTaskKind(event.kind)) compute += event.end - event.start;
    }
    const double share = trace.totalCycles != 0
                             ? static_cast<double>(compute) / static_cast<double>(trace.totalCycles)
                             : 0.0;
    loads.push_back({ipu, busy, share, 1.0 - busy});
  }
  return loads;
}

std::vector<IpuMemoryLoad> memoryLoads(const Json& memory) {
  std::vector<IpuMemoryLoad> result;
  for (const Json& ipu : memory.at("ipus")) {
    IpuMemoryLoad load;
    load.ipu = ipu.at("ipu").get<int64_t>();
    load.total = ipu.at("total").get<uint64_t>();
    load.limit = ipu.at("limit").get<uint64_t>();
    uint64_t largest = 0;
    const Json categories = categoriesOf(ipu);
    for (const auto& [name, bytes] : categories.items()) {
      if (load.largestCategory.empty() || bytes.get<uint64_t>() > largest) {
        load.largestCategory = name;
        largest = bytes.get<uint64_t>();
      }
    }
    if (ipu.contains("temporaries")) { // absent from older profiles
      load.temporaryBudget = ipu["temporaries"].value("budget", uint64_t{0});
      load.splitOps = ipu["temporaries"].value("split_ops", Json::array());
    }
    result.push_back(std::move(load));
  }
  return result;
}

std::string stageName(const StageLoad& stage) {
  const std::string blocks =
      stage.blocks.empty() ? "" : " (blocks " + join(stage.blocks, ", ") + ")";
  return "stage " + std::to_string(stage.stage) + blocks + " on IPU " + std::to_string(stage.ipu);
}

// The advice for host-bound calls whose replicas take turns on the
// process's host threads (IpuSystemConfig::replicasPerHostThread).
std::string sharedHostThreadAdvice(int64_t replicasPerThread) {
  return "Host transfers wait for a host thread: each of this process's threads streams the "
         "data of " +
         std::to_string(replicasPerThread) +
         " replicas in turn. To stream them in parallel, run the replicas in more processes "
         "(Options.Distributed, one torchrun or PopRun process each) or give the stream "
         "callbacks more threads (engine options streamCallbacks.multiThreadMode and "
         "streamCallbacks.numWorkerThreads).";
}

// Under SyncPattern.Full a pipeline cycle lasts the longest host exchange
// plus the most any IPU does besides (the clock's rule); with SinglePipeline
// each IPU's exchanges only hold up that IPU. From the stages' loads per
// micro-batch, summed per IPU: the advice when SinglePipeline would shorten
// the cycle by a worthwhile share, none otherwise.
std::optional<std::string> singlePipelineAdvice(const std::vector<StageLoad>& stages) {
  std::map<int64_t, std::pair<double, double>> ipus; // IPU: (host exchanges, other work)
  for (const StageLoad& stage : stages) {
    std::pair<double, double>& ipu = ipus[stage.ipu];
    ipu.first += stage.hostCycles;
    ipu.second += stage.cycles - stage.hostCycles;
  }
  if (ipus.size() < 2) return std::nullopt;
  double host = 0, work = 0, alone = 0;
  int64_t exchanging = 0;
  for (const auto& [ipu, load] : ipus) {
    if (load.first > host) {
      host = load.first;
      exchanging = ipu;
    }
    work = std::max(work, load.second);
    alone = std::max(alone, load.first + load.second);
  }
  const double full = host + work;
  if (full <= 0 || (full - alone) / full <= kSyncPatternGainWorthNoting) return std::nullopt;
  return "Under SyncPattern.Full (PopTorch's default) every IPU waits out each host exchange: "
         "IPU " +
         std::to_string(exchanging) + "'s take " + groupedFixed(host, 0) +
         " cycles per micro-batch. opts.syncPattern(popsim.SyncPattern.SinglePipeline) lets "
         "the other IPUs compute meanwhile: pipeline cycles up to " +
         percent((full - alone) / full, 0) + " shorter.";
}

} // namespace

Json categoriesOf(const Json& ipu) {
  Json result = Json::object();
  for (const char* part : {"always_live", "not_always_live"}) {
    for (const auto& [name, bytes] : ipu.at(part).at("categories").items())
      result[name] = bytes;
  }
  return result;
}

const HostLinkLoad* Analysis::slowestLink() const {
  return extreme(hostLinks, [](const HostLinkLoad& link) { return link.cycles; });
}

const StageLoad* Analysis::bottleneck() const {
  return extreme(stages, [](const StageLoad& stage) { return stage.cycles; });
}

const StageLoad* Analysis::fastest() const {
  return extreme(
      stages, [](const StageLoad& stage) { return stage.cycles; }, true);
}

bool Analysis::linkBound() const {
  const HostLinkLoad* link = slowestLink();
  const StageLoad* stage = bottleneck();
  return link != nullptr && (stage == nullptr || link->cycles > stage->cycles);
}

double Analysis::idleFraction() const {
  if (ipus.empty()) return 0.0;
  double sum = 0;
  for (const IpuLoad& ipu : ipus)
    sum += ipu.idleFraction;
  return sum / static_cast<double>(ipus.size());
}

const IpuMemoryLoad* Analysis::tightestMemory() const {
  return extreme(memory, [](const IpuMemoryLoad& m) { return m.fraction(); });
}

std::optional<int64_t> stageOfTask(const std::string& task) {
  size_t digits = task.rfind("FB", 0) == 0                                ? 2
                  : (!task.empty() && (task[0] == 'F' || task[0] == 'B')) ? 1
                                                                          : 0;
  if (digits == 0 || digits == task.size()) return std::nullopt;
  for (size_t i = digits; i < task.size(); ++i) {
    if (task[i] < '0' || task[i] > '9') return std::nullopt;
  }
  return std::stoll(task.substr(digits));
}

std::vector<StageLoad> stageLoads(const CallTrace& trace, const std::vector<StageBlocks>& stages) {
  // (stage, step, micro_batch) -> compute, host, copy, host output
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::array<uint64_t, 4>> parts;
  std::map<int64_t, int64_t> ipuOfStage;
  for (const TraceEvent& event : trace.events) {
    const std::optional<int64_t> stage = stageOfTask(event.task);
    if (!stage || !trace.occupiesIpu(event)) continue;
    ipuOfStage[*stage] = event.ipu;
    const uint64_t cycles = event.end - event.start;
    const size_t column = isTaskKind(event.kind) ? 0 : event.kind == "copy" ? 2 : 1;
    std::array<uint64_t, 4>& part = parts[{*stage, event.step, event.microBatch}];
    part[column] += cycles;
    if (event.kind == "host_output") part[3] += cycles;
  }
  std::map<int64_t, std::vector<std::string>> blocks;
  for (const StageBlocks& stage : stages)
    blocks[stage.stage] = stage.blocks;
  std::vector<StageLoad> loads;
  for (const auto& [stage, ipu] : ipuOfStage) {
    std::array<std::vector<double>, 5> columns; // total, compute, host, copy, output
    for (const auto& [key, part] : parts) {
      if (std::get<0>(key) != stage) continue;
      columns[0].push_back(static_cast<double>(part[0] + part[1] + part[2]));
      for (size_t i = 0; i < 4; ++i)
        columns[i + 1].push_back(static_cast<double>(part[i]));
    }
    loads.push_back({stage, ipu, blocks[stage], median(columns[0]), median(columns[1]),
                     median(columns[2]), median(columns[3]), median(columns[4])});
  }
  return loads;
}

Analysis analyse(const CallTrace* trace, const std::vector<StageBlocks>& stages,
                 const Json* memory) {
  Analysis analysis;
  if (trace != nullptr) {
    analysis.stages = stageLoads(*trace, stages);
    analysis.ipus = ipuLoads(*trace);
    analysis.replicasPerHostThread = trace->pipeline.replicasPerHostThread;
    analysis.hostExchangesStallEveryIpu = trace->pipeline.hostExchangesStallEveryIpu;
    if (trace->pipeline.inputsPreparedAhead != 0) {
      const std::vector<double> links = trace->hostLinkCycles();
      for (size_t ipu = 0; ipu < links.size(); ++ipu) {
        if (links[ipu] != 0) analysis.hostLinks.push_back({static_cast<int64_t>(ipu), links[ipu]});
      }
    }
  }
  if (memory != nullptr) analysis.memory = memoryLoads(*memory);
  return analysis;
}

std::vector<std::string> advice(const Analysis& analysis, bool pipelined) {
  std::vector<std::string> lines;
  const StageLoad* slowest = analysis.bottleneck();
  const StageLoad* fastest = analysis.fastest();
  if (analysis.linkBound()) {
    const HostLinkLoad* link = analysis.slowestLink();
    const std::string work =
        slowest ? ", more than any stage's (" + groupedFixed(slowest->cycles, 0) + ")" : "";
    lines.push_back("Bottleneck: IPU " + std::to_string(link->ipu) + "'s host link takes " +
                    groupedFixed(link->cycles, 0) + " cycles to stream a micro-batch's inputs in" +
                    work +
                    ", so the IPUs wait for their data. Each transfer pays the host's fixed "
                    "latency (and through IO tiles its bytes): larger micro-batches amortise "
                    "the latency, and spreading the model over more IPUs cannot help.");
  }
  if (slowest != nullptr && analysis.stages.size() > 1) {
    const double spread =
        slowest->cycles != 0 ? (slowest->cycles - fastest->cycles) / slowest->cycles : 0.0;
    const std::string times = fixed(slowest->cycles / std::max(fastest->cycles, 1.0), 1) + "x";
    if (spread <= kBalancedWithin) {
      lines.push_back("Stages are balanced: the slowest, " + stageName(*slowest) + ", is within " +
                      percent(spread, 0) + " of the fastest.");
    } else if (analysis.linkBound()) {
      lines.push_back("Slowest stage: " + stageName(*slowest) + ", " +
                      groupedFixed(slowest->cycles, 0) + " cycles per micro-batch, " + times +
                      " the fastest; it sets the pace only once the host link is faster.");
    } else if (pipelined) {
      lines.push_back("Bottleneck: " + stageName(*slowest) + " takes " +
                      groupedFixed(slowest->cycles, 0) + " cycles per micro-batch, " + times +
                      " the fastest (" + stageName(*fastest) + ", " +
                      groupedFixed(fastest->cycles, 0) +
                      "). Every pipeline cycle waits for it: move layers or blocks from stage " +
                      std::to_string(slowest->stage) + " to other stages.");
    } else {
      double total = 0;
      for (const StageLoad& stage : analysis.stages)
        total += stage.cycles;
      lines.push_back("Slowest stage: " + stageName(*slowest) + " takes " +
                      groupedFixed(slowest->cycles, 0) + " cycles per micro-batch, " +
                      percent(slowest->cycles / total, 0) +
                      " of the stages' time. Sharded execution runs the stages one after "
                      "another, so their times add up; PipelinedExecution overlaps them, "
                      "limited by the slowest stage.");
    }
  }
  const bool hostBound = slowest != nullptr && slowest->cycles != 0 &&
                         slowest->hostCycles / slowest->cycles > kHostBound;
  if (hostBound) {
    const std::string outputs =
        slowest->outputCycles > slowest->hostCycles / 2
            ? " Most of it streams outputs back: return fewer of them (OutputMode.Final or "
              "EveryN) if the host does not need every micro-batch's."
            : "";
    lines.push_back(percent(slowest->hostCycles / slowest->cycles, 0) + " of stage " +
                    std::to_string(slowest->stage) +
                    "'s time is host transfers on its compute tiles: fewer, larger transfers "
                    "(a larger micro-batch) amortise their fixed latency." +
                    outputs +
                    " Through IO tiles (Options.TensorLocations.numIOTiles, "
                    "popsim.set_overlap_for_input / set_overlap_for_output, with "
                    "ShardedExecution) the bytes cross beside the compute.");
  }
  if ((hostBound || analysis.linkBound()) && analysis.replicasPerHostThread > 1)
    lines.push_back(sharedHostThreadAdvice(analysis.replicasPerHostThread));
  if (pipelined && analysis.hostExchangesStallEveryIpu) {
    if (const std::optional<std::string> line = singlePipelineAdvice(analysis.stages))
      lines.push_back(*line);
  }
  const double idle = analysis.idleFraction();
  if (analysis.linkBound() && !analysis.ipus.empty() && idle > kIdleWorthNoting) {
    lines.push_back("The IPUs wait " + percent(idle, 0) +
                    " of the call on average, mostly for their inputs from the host link.");
  } else if (pipelined && !analysis.ipus.empty() && idle > kIdleWorthNoting) {
    lines.push_back("The IPUs wait " + percent(idle, 0) +
                    " of the call on average (pipeline ramp-up and ramp-down, and faster "
                    "stages waiting for the slowest). More micro-batches per step "
                    "(gradientAccumulation, or deviceIterations for inference) shrink the "
                    "ramps' share.");
  }
  for (const IpuMemoryLoad& memory : analysis.memory) {
    // (An IPU that does not fit has no room for larger temporaries: its advice is the
    // memory report's.)
    if (memory.splitOps.empty() || memory.total > memory.limit) continue;
    const Json& op = memory.splitOps.front();
    uint64_t needed = 0;
    for (const Json& split : memory.splitOps) {
      needed = std::max(needed, split.at("bytes_in_one_pass").get<uint64_t>());
    }
    // Rounded up to a thousandth, so that the proportion given is enough.
    const double proportion = std::min(
        1.0,
        std::ceil(static_cast<double>(needed) / static_cast<double>(memory.limit) * 1000) / 1000);
    const std::string ipu = std::to_string(memory.ipu);
    lines.push_back("IPU " + ipu +
                    ": availableMemoryProportion caps each matmul or "
                    "convolution's temporaries at " +
                    mib(static_cast<double>(memory.temporaryBudget)) + ", so " +
                    std::to_string(memory.splitOps.size()) + " op(s) run in serial passes (most: " +
                    op.at("op").get<std::string>() + " at " + op.at("location").get<std::string>() +
                    ", " + std::to_string(op.at("passes").get<uint64_t>()) +
                    " passes). setAvailableMemoryProportion({'IPU" + ipu +
                    "': " + general(proportion, 6) +
                    "}) runs them in one pass if the IPU has the room; the passes cost cycles, "
                    "the proportion memory.");
  }
  if (const IpuMemoryLoad* tightest = analysis.tightestMemory()) {
    lines.push_back(
        "IPU " + std::to_string(tightest->ipu) +
        " is closest to its memory limit: " + mib(static_cast<double>(tightest->total)) + " of " +
        mib(static_cast<double>(tightest->limit)) + " (" + percent(tightest->fraction(), 1) +
        "), mostly " + tightest->largestCategory + ".");
  }
  return lines;
}

} // namespace popsim::profile
