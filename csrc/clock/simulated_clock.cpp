// The lockstep replay of one call, pipeline cycle by pipeline cycle:
// 1. each task of a cycle runs on its IPU's clock: its host input (on the
//    IPU's host link, prefetched as far as the buffers allow, or through the
//    IO tiles), its link copies, Streaming Memory loads, compute, stores and
//    host outputs, waiting where a transfer is still in flight;
// 2. the cycle lasts as long as its busiest IPU, plus a sync; when host
//    exchanges synchronise every IPU (SyncPattern.Full), no IPU works while
//    one exchanges with the host, so the cycle lasts its longest host
//    exchange plus the most any IPU does besides its own;
// 3. fast-forward: when the next cycles have the tasks and outputs of the
//    last `period` replayed ones and the clock's state, relative to the
//    present, is what it was when those began, they repeat them exactly,
//    and so does every following period of the same tasks: the schedule's
//    run of such periods is copied, shifted in time, instead of replayed. A
//    step of thousands of micro-batches costs its ramp-up, the first steady
//    periods and its ramp-down.

#include "clock/simulated_clock.h"

#include "clock/host_input_link.h"
#include "clock/recent_times.h"
#include "common/check.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace popsim::clock {
namespace {

using costs::HostOutputCost;
using costs::TaskCycles;

// One IPU's outputs (to the host, or stores to Streaming Memory) leaving
// through its IO tiles: one transfer at a time on the link, each from one of
// the IO tiles' buffers.
struct IoTileOutputs {
  uint64_t linkFree = 0;
  RecentTimes transferEnds{device::kIoTileBuffers};

  // When the next output may be copied into a buffer: once the transfer
  // that used it before has left.
  uint64_t bufferFree() const {
    return transferEnds.count() >= device::kIoTileBuffers
               ? transferEnds.back(device::kIoTileBuffers)
               : 0;
  }
  // Sends `cycles` from the IO tiles once the compute tiles have copied
  // them there at `ready`; returns the transfer.
  HostInputLink::Transfer send(uint64_t ready, uint64_t cycles) {
    const uint64_t start = std::max(linkFree, ready);
    linkFree = start + cycles;
    transferEnds.push(linkFree);
    return {start, linkFree};
  }
  void appendSignature(std::vector<int64_t>& out, uint64_t now) const {
    out.push_back(static_cast<int64_t>(linkFree) - static_cast<int64_t>(now));
    transferEnds.appendSignature(out, now);
  }
  void advance(uint64_t delta, size_t transfers, size_t repetitions) {
    linkFree += delta * repetitions;
    transferEnds.advance(delta, transfers, repetitions);
  }
};

uint64_t longestOf(const std::map<int64_t, uint64_t>& busy) {
  uint64_t longest = 0;
  for (const auto& [ipu, cycles] : busy) {
    longest = std::max(longest, cycles);
  }
  return longest;
}

// Which of an IPU's transfer resources some pipeline cycles' tasks use, and
// how many transfers each makes in them (the period of its series).
struct IpuUse {
  size_t hostInputs = 0;     // host link transfers
  size_t ioTileInputs = 0;   // overlapped inputs into the IO tiles
  size_t ioTileOutputs = 0;  // host outputs from the IO tiles
  size_t ioTileLoads = 0;    // Streaming Memory loads through the IO tiles
  size_t ioTileStores = 0;   // Streaming Memory stores through the IO tiles
  bool storesDone = false;   // reads or writes the IPU's latest store time
  bool stepBoundary = false; // an overlapped input bounded by its step's start
  bool any() const {
    return hostInputs + ioTileInputs + ioTileOutputs + ioTileLoads + ioTileStores != 0 ||
           storesDone || stepBoundary;
  }
};

bool sameOutputs(const std::vector<HostOutputCost>& a, const std::vector<HostOutputCost>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.output == y.output && x.cycles == y.cycles && x.ioTiles == y.ioTiles &&
           x.ioTileCycles == y.ioTileCycles && x.acrossSteps == y.acrossSteps;
  });
}

// What decides how a pipeline cycle replays, but its time: its tasks in
// order, whether each is an update, and the outputs each returns (which
// depend on the micro-batch).
struct CycleKey {
  struct Entry {
    size_t task = 0;
    bool update = false;
    std::vector<HostOutputCost> outputs;
  };
  std::vector<Entry> entries;
  bool operator==(const CycleKey& other) const {
    return std::equal(entries.begin(), entries.end(), other.entries.begin(), other.entries.end(),
                      [](const Entry& a, const Entry& b) {
                        return a.task == b.task && a.update == b.update &&
                               sameOutputs(a.outputs, b.outputs);
                      });
  }
};

// Everything pipeline cycles share on the clock besides the present.
struct ClockState {
  std::vector<HostInputLink> links;
  std::vector<HostInputLink> ioTileInputs;
  std::vector<IoTileOutputs> ioTileOutputs;
  std::vector<HostInputLink> ioTileLoads;
  std::vector<IoTileOutputs> ioTileStores;
  std::vector<uint64_t> storesDone; // each IPU's latest Streaming Memory store
  uint64_t outputsLeft = 0;         // the last transfer out through IO tiles has left
  uint64_t stepOutputsLeft = 0;     // the step's AccumulationLoop outputs

  ClockState(size_t ipus, int64_t inputsPreparedAhead)
      : links(ipus, HostInputLink(inputsPreparedAhead)),
        ioTileInputs(ipus, HostInputLink(static_cast<int64_t>(device::kIoTileBuffers) - 1)),
        ioTileOutputs(ipus),
        ioTileLoads(ipus, HostInputLink(static_cast<int64_t>(device::kIoTileBuffers) - 1)),
        ioTileStores(ipus), storesDone(ipus, 0) {}

  // The part of the state that cycles using `use` read, relative to `now`
  // (`stepStart`: when the step began): cycles with the same tasks and the
  // same signature replay the same, only later. Times the replay only
  // raises to a maximum (the outputs still leaving) or takes as a lower
  // bound that something else already passes matter only when they could
  // still decide.
  std::vector<int64_t> signature(const std::vector<IpuUse>& use, uint64_t now,
                                 uint64_t stepStart) const {
    std::vector<int64_t> result;
    const auto relative = [&](uint64_t time) {
      return static_cast<int64_t>(time) - static_cast<int64_t>(now);
    };
    result.push_back(outputsLeft > now ? relative(outputsLeft) : 0);
    result.push_back(stepOutputsLeft > now ? relative(stepOutputsLeft) : 0);
    for (size_t ipu = 0; ipu < use.size(); ++ipu) {
      const IpuUse& used = use[ipu];
      if (!used.any()) continue;
      result.push_back(static_cast<int64_t>(ipu));
      if (used.hostInputs != 0) links[ipu].appendSignature(result, now);
      if (used.ioTileInputs != 0) ioTileInputs[ipu].appendSignature(result, now);
      if (used.ioTileOutputs != 0) ioTileOutputs[ipu].appendSignature(result, now);
      if (used.ioTileLoads != 0) ioTileLoads[ipu].appendSignature(result, now);
      if (used.ioTileStores != 0) ioTileStores[ipu].appendSignature(result, now);
      if (used.storesDone) result.push_back(relative(storesDone[ipu]));
      // The step's start bounds an overlapped input's transfer from below
      // until the link is busy beyond it, which it then stays.
      if (used.stepBoundary) {
        const bool passed = stepStart <= ioTileInputs[ipu].linkFree();
        result.push_back(passed ? 1 : 0);
        if (!passed) result.push_back(relative(stepStart));
      }
    }
    return result;
  }

  // The state `repetitions` more periods later, each period `delta` long
  // and using `use`; `now` is the present, before the jump.
  void advance(const std::vector<IpuUse>& use, uint64_t delta, size_t repetitions, uint64_t now) {
    for (size_t ipu = 0; ipu < use.size(); ++ipu) {
      const IpuUse& used = use[ipu];
      if (used.hostInputs != 0) links[ipu].advance(delta, used.hostInputs, repetitions);
      if (used.ioTileInputs != 0) ioTileInputs[ipu].advance(delta, used.ioTileInputs, repetitions);
      if (used.ioTileOutputs != 0)
        ioTileOutputs[ipu].advance(delta, used.ioTileOutputs, repetitions);
      if (used.ioTileLoads != 0) ioTileLoads[ipu].advance(delta, used.ioTileLoads, repetitions);
      if (used.ioTileStores != 0) ioTileStores[ipu].advance(delta, used.ioTileStores, repetitions);
      if (used.storesDone) storesDone[ipu] += delta * repetitions;
    }
    if (outputsLeft > now) outputsLeft += delta * repetitions;
    if (stepOutputsLeft > now) stepOutputsLeft += delta * repetitions;
  }
};

// Repeats of a period of more cycles than this are replayed in full.
constexpr size_t kLongestPeriod = 32;

// The replay of one call.
class Replay {
public:
  explicit Replay(const ClockSetup& setup)
      : setup_(setup), layout_(*setup.layout), numIpus_(static_cast<size_t>(layout_.numIpus())),
        state_(numIpus_, setup.inputsPreparedAhead) {
    for (const compiler::PipelineTask& task : layout_.tasks()) {
      names_.push_back(task.name());
    }
  }

  SimulatedCall run() {
    for (int64_t step = 0; step < setup_.steps; ++step) {
      runStep(step);
    }
    call_.cycles = std::max(now_, state_.outputsLeft);
    return std::move(call_);
  }

private:
  // A replayed pipeline cycle, which later ones may repeat.
  struct Replayed {
    CycleKey key;
    ClockState before; // the state it started from
    int64_t cycle = 0; // in the call
    uint64_t start = 0;
    uint64_t computeDuration = 0;
    size_t firstEvent = 0;
    std::vector<size_t> eventTasks; // per event: the position of its task in the cycle
  };

  void runStep(int64_t step) {
    stepStart_ = now_;
    state_.stepOutputsLeft = 0;
    const std::vector<compiler::PipelineCycle>& schedule = *setup_.schedule;
    std::vector<Replayed> history; // the step's replayed cycles since the last jump
    std::vector<CycleKey> keys;
    for (const compiler::PipelineCycle& cycle : schedule) {
      keys.push_back(keyOf(cycle, step));
    }
    for (size_t index = 0; index < schedule.size();) {
      if (setup_.fastForward) {
        const size_t jumped = fastForward(history, keys, schedule, index, step);
        if (jumped != 0) {
          index += jumped;
          history.clear();
          continue;
        }
      }
      Replayed replayed{keys[index], state_, cycleIndex_, now_, 0, call_.timeline.size(), {}};
      eventTasks_.clear();
      replayed.computeDuration = replayCycle(schedule[index], step);
      replayed.eventTasks = eventTasks_;
      if (step == 0) call_.computeCyclesOfFirstStep += replayed.computeDuration;
      ++call_.replayedCycles;
      history.push_back(std::move(replayed));
      if (history.size() > kLongestPeriod) history.erase(history.begin());
      ++index;
    }
    // The accumulation loop ends with its outputs.
    now_ = std::max(now_, state_.stepOutputsLeft);
  }

  // If the cycles from `index` on repeat the last `period` replayed ones
  // (the same tasks, from the same state relative to the present), copies
  // as many whole periods as the schedule repeats; returns the cycles
  // copied (0: none).
  size_t fastForward(const std::vector<Replayed>& history, const std::vector<CycleKey>& keys,
                     const std::vector<compiler::PipelineCycle>& schedule, size_t index,
                     int64_t step) {
    for (size_t period = 1; period <= history.size(); ++period) {
      if (index + period > keys.size()) break;
      const size_t first = history.size() - period;
      bool sameTasks = true;
      for (size_t k = 0; k < period && sameTasks; ++k)
        sameTasks = keys[index + k] == history[first + k].key;
      if (!sameTasks) continue;
      std::vector<IpuUse> use(numIpus_);
      for (size_t k = 0; k < period; ++k)
        addUse(use, schedule[index + k], keys[index + k]);
      const Replayed& origin = history[first];
      if (state_.signature(use, now_, stepStart_) !=
          origin.before.signature(use, origin.start, stepStart_))
        continue;
      size_t repetitions = 1;
      while (index + (repetitions + 1) * period <= keys.size()) {
        bool again = true;
        for (size_t k = 0; k < period && again; ++k)
          again = keys[index + repetitions * period + k] == history[first + k].key;
        if (!again) break;
        ++repetitions;
      }
      copyPeriods(history, first, schedule, index, period, repetitions, step, use);
      return period * repetitions;
    }
    return 0;
  }

  // Cycles [index, index + period x repetitions): the replayed cycles from
  // history[first] on, again and again, one period's length apart.
  void copyPeriods(const std::vector<Replayed>& history, size_t first,
                   const std::vector<compiler::PipelineCycle>& schedule, size_t index,
                   size_t period, size_t repetitions, int64_t step,
                   const std::vector<IpuUse>& use) {
    const uint64_t delta = now_ - history[first].start;
    const size_t lastEvent = call_.timeline.size();
    uint64_t computeDuration = 0;
    for (size_t k = 0; k < period; ++k)
      computeDuration += history[first + k].computeDuration;
    for (size_t r = 1; r <= repetitions; ++r) {
      for (size_t k = 0; k < period; ++k) {
        const Replayed& origin = history[first + k];
        const size_t originEnd =
            first + k + 1 < history.size() ? history[first + k + 1].firstEvent : lastEvent;
        const compiler::PipelineCycle& cycle = schedule[index + (r - 1) * period + k];
        for (size_t event = origin.firstEvent; event < originEnd; ++event) {
          TimelineEvent copy = call_.timeline[event];
          copy.start += r * delta;
          copy.end += r * delta;
          copy.cycle = cycleIndex_;
          copy.microBatch = microBatchOf(cycle[origin.eventTasks[event - origin.firstEvent]], step);
          call_.timeline.push_back(std::move(copy));
        }
        const CycleSpan span = call_.cycleSpans[static_cast<size_t>(origin.cycle)];
        call_.cycleSpans.push_back({span.start + r * delta, span.end + r * delta});
        ++cycleIndex_;
      }
    }
    state_.advance(use, delta, repetitions, now_);
    if (step == 0) call_.computeCyclesOfFirstStep += computeDuration * repetitions;
    now_ += delta * repetitions;
  }

  // A pipeline cycle's length before its closing sync, from each IPU's busy
  // time and the part of it spent on host exchanges through its compute
  // tiles (waiting for the host's data included).
  uint64_t cycleLength(const std::map<int64_t, uint64_t>& busy,
                       const std::map<int64_t, uint64_t>& hostExchange) const {
    if (!setup_.hostExchangesStallEveryIpu) return longestOf(busy);
    uint64_t work = 0;
    for (const auto& [ipu, cycles] : busy) {
      const auto host = hostExchange.find(ipu);
      work = std::max(work, cycles - (host == hostExchange.end() ? 0 : host->second));
    }
    return work + longestOf(hostExchange);
  }

  int64_t microBatchOf(const compiler::ScheduledTask& scheduled, int64_t step) const {
    return scheduled.microBatch < 0 ? -1 : step * setup_.microBatchesPerStep + scheduled.microBatch;
  }

  CycleKey keyOf(const compiler::PipelineCycle& cycle, int64_t step) const {
    CycleKey key;
    for (const compiler::ScheduledTask& scheduled : cycle) {
      std::vector<HostOutputCost> outputs;
      if (setup_.hostOutputs)
        outputs = setup_.hostOutputs(scheduled.task, microBatchOf(scheduled, step));
      key.entries.push_back({scheduled.task, scheduled.microBatch < 0, std::move(outputs)});
    }
    return key;
  }

  void addUse(std::vector<IpuUse>& use, const compiler::PipelineCycle& cycle,
              const CycleKey& key) const {
    for (size_t position = 0; position < cycle.size(); ++position) {
      const size_t task = cycle[position].task;
      const TaskCycles& costs = setup_.tasks[task];
      IpuUse& ipu = use[static_cast<size_t>(layout_.tasks()[task].ipu)];
      ipu.hostInputs += costs.streamsInputs ? 1 : 0;
      ipu.ioTileInputs += costs.streamsOverlappedInputs ? 1 : 0;
      ipu.stepBoundary |= costs.streamsOverlappedInputs && !costs.overlapAcrossSteps;
      ipu.ioTileLoads += costs.ioTileLoadCycles != 0 ? 1 : 0;
      ipu.ioTileStores += costs.ioTileStoreCycles != 0 ? 1 : 0;
      ipu.storesDone |=
          costs.ioTileLoadCycles != 0 || costs.ioTileStoreCycles != 0 || costs.streamOutCycles != 0;
      for (const HostOutputCost& output : key.entries[position].outputs) {
        ipu.ioTileOutputs += output.ioTiles ? 1 : 0;
      }
    }
  }

  // Replays one pipeline cycle; returns its compute duration (the longest
  // IPU's compute, plus the sync).
  uint64_t replayCycle(const compiler::PipelineCycle& cycle, int64_t step) {
    std::map<int64_t, uint64_t> busy;
    std::map<int64_t, uint64_t> computing;
    std::map<int64_t, uint64_t> hostExchange;
    for (size_t position = 0; position < cycle.size(); ++position) {
      replayTask(cycle[position], position, step, busy, computing, hostExchange);
    }
    const uint64_t start = now_;
    now_ += cycleLength(busy, hostExchange) + setup_.syncCycles;
    call_.cycleSpans.push_back({start, now_});
    ++cycleIndex_;
    return longestOf(computing) + setup_.syncCycles;
  }

  void replayTask(const compiler::ScheduledTask& scheduled, size_t position, int64_t step,
                  std::map<int64_t, uint64_t>& busy, std::map<int64_t, uint64_t>& computing,
                  std::map<int64_t, uint64_t>& hostExchange) {
    const compiler::PipelineTask& task = layout_.tasks()[scheduled.task];
    const TaskCycles& costs = setup_.tasks[scheduled.task];
    const int64_t microBatch = microBatchOf(scheduled, step);
    computing[task.ipu] += costs.computeCycles;
    uint64_t& clock = busy[task.ipu];
    const uint64_t now = now_;
    const auto event = [&](EventPart part, uint64_t start, uint64_t end, bool ioTiles) {
      call_.timeline.push_back({task.ipu,
                                names_[scheduled.task],
                                task.kind,
                                step,
                                microBatch,
                                cycleIndex_,
                                part,
                                start,
                                end,
                                {},
                                ioTiles});
      eventTasks_.push_back(position);
    };
    // Every task gets its compute event; transfers only when there are any.
    const auto record = [&](EventPart part, uint64_t cycles) {
      if (cycles == 0 && part != EventPart::Compute) return;
      event(part, now + clock, now + clock + cycles, false);
      clock += cycles;
    };
    const auto ipu = static_cast<size_t>(task.ipu);
    const auto waitUntil = [&](uint64_t time) {
      clock = std::max(clock, time - std::min(time, now));
    };
    HostInputLink& link = state_.links[ipu];
    uint64_t hostReady = 0; // the host has prepared the inputs
    if (costs.streamsInputs) {
      const HostInputLink::Transfer transfer = link.next(now + clock, costs.inputLatencyCycles);
      event(EventPart::HostInput, transfer.start, transfer.end, false);
      hostReady = transfer.end;
      if (costs.inputDataCycles != 0) {
        const uint64_t before = clock;
        waitUntil(transfer.end);
        record(EventPart::StreamCopy, costs.inputDataCycles);
        hostExchange[task.ipu] += clock - before;
      }
    }
    if (costs.streamsOverlappedInputs) {
      const uint64_t loopStart = costs.overlapAcrossSteps ? 0 : stepStart_;
      const HostInputLink::Transfer transfer = state_.ioTileInputs[ipu].next(
          now + clock, costs.overlappedInputCycles, std::max(hostReady, loopStart));
      event(EventPart::HostInput, transfer.start, transfer.end, true);
      waitUntil(transfer.end);
      record(EventPart::StreamCopy, costs.ioTileInputCycles);
      state_.ioTileInputs[ipu].finishedReading(now + clock);
    }
    record(EventPart::LinkCopy, costs.copyCycles);
    if (costs.copyCycles != 0) call_.timeline.back().fromIpus = costs.copySources;
    if (costs.ioTileLoadCycles != 0) {
      // Loads may not pass the IPU's earlier stores, which might hold their data.
      const HostInputLink::Transfer load =
          state_.ioTileLoads[ipu].next(now + clock, costs.ioTileLoadCycles, state_.storesDone[ipu]);
      event(EventPart::StreamingMemory, load.start, load.end, true);
      waitUntil(load.end);
      record(EventPart::StreamCopy, costs.ioTileLoadCopyCycles);
      state_.ioTileLoads[ipu].finishedReading(now + clock);
    }
    record(EventPart::StreamingMemory, costs.streamInCycles);
    record(EventPart::Compute, costs.computeCycles - costs.copyCycles);
    record(EventPart::StreamingMemory, costs.streamOutCycles);
    if (costs.streamOutCycles != 0) state_.storesDone[ipu] = now + clock;
    if (costs.ioTileStoreCycles != 0) {
      IoTileOutputs& stores = state_.ioTileStores[ipu];
      waitUntil(stores.bufferFree());
      record(EventPart::StreamCopy, costs.ioTileStoreCopyCycles);
      const HostInputLink::Transfer store = stores.send(now + clock, costs.ioTileStoreCycles);
      event(EventPart::StreamingMemory, store.start, store.end, true);
      state_.storesDone[ipu] = std::max(state_.storesDone[ipu], store.end);
      state_.outputsLeft = std::max(state_.outputsLeft, store.end);
    }
    if (costs.streamsInputs) link.finishedReading(now + clock);
    if (!setup_.hostOutputs) return;
    for (const HostOutputCost& output : setup_.hostOutputs(scheduled.task, microBatch)) {
      if (!output.ioTiles) {
        record(EventPart::HostOutput, output.cycles);
        hostExchange[task.ipu] += output.cycles;
        if (output.cycles != 0) call_.timeline.back().output = output.output;
        continue;
      }
      IoTileOutputs& outputs = state_.ioTileOutputs[ipu];
      waitUntil(outputs.bufferFree());
      record(EventPart::StreamCopy, output.ioTileCycles);
      const HostInputLink::Transfer sent = outputs.send(now + clock, output.cycles);
      event(EventPart::HostOutput, sent.start, sent.end, true);
      call_.timeline.back().output = output.output;
      state_.outputsLeft = std::max(state_.outputsLeft, sent.end);
      if (!output.acrossSteps) state_.stepOutputsLeft = std::max(state_.stepOutputsLeft, sent.end);
    }
  }

  const ClockSetup& setup_;
  const compiler::TaskLayout& layout_;
  size_t numIpus_;
  std::vector<std::string> names_;
  ClockState state_;
  SimulatedCall call_;
  uint64_t now_ = 0;
  uint64_t stepStart_ = 0; // the step's first pipeline cycle
  int64_t cycleIndex_ = 0;
  std::vector<size_t> eventTasks_; // the cycle being replayed: each event's task position
};

} // namespace

SimulatedCall simulateCall(const ClockSetup& setup) {
  POPSIM_ASSERT(setup.layout != nullptr && setup.schedule != nullptr,
                "the simulated clock needs a layout, task costs and a schedule.");
  return Replay(setup).run();
}

} // namespace popsim::clock
