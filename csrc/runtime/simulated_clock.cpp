#include "runtime/simulated_clock.h"

#include "common/check.h"
#include "runtime/host_input_link.h"

#include <algorithm>
#include <map>

namespace popsim::runtime {
namespace {

uint64_t longestOf(const std::map<int64_t, uint64_t>& busy) {
  uint64_t longest = 0;
  for (const auto& [ipu, cycles] : busy) {
    longest = std::max(longest, cycles);
  }
  return longest;
}

} // namespace

SimulatedCall simulateCall(const ClockSetup& setup) {
  POPSIM_ASSERT(setup.layout != nullptr && setup.tasks != nullptr && setup.schedule != nullptr,
                "the simulated clock needs a layout, task costs and a schedule.");
  const passes::TaskLayout& layout = *setup.layout;
  std::vector<std::string> names;
  for (const passes::PipelineTask& task : layout.tasks()) {
    names.push_back(task.name());
  }
  std::vector<HostInputLink> links(static_cast<size_t>(layout.numIpus()),
                                   HostInputLink(setup.prefetchDepth));
  SimulatedCall call;
  uint64_t now = 0;
  int64_t cycleIndex = 0;
  for (int64_t step = 0; step < setup.steps; ++step) {
    for (const PipelineCycle& cycle : *setup.schedule) {
      std::map<int64_t, uint64_t> busy;
      std::map<int64_t, uint64_t> computing;
      for (const ScheduledTask& scheduled : cycle) {
        const passes::PipelineTask& task = layout.tasks()[scheduled.task];
        const TaskCycles& costs = (*setup.tasks)[scheduled.task];
        const int64_t microBatch =
            scheduled.microBatch < 0 ? -1 : step * setup.microBatchesPerStep + scheduled.microBatch;
        computing[task.ipu] += costs.computeCycles;
        uint64_t& clock = busy[task.ipu];
        const auto event = [&](EventPart part, uint64_t start, uint64_t end) {
          call.timeline.push_back({task.ipu,
                                   names[scheduled.task],
                                   task.kind,
                                   step,
                                   microBatch,
                                   cycleIndex,
                                   part,
                                   start,
                                   end,
                                   {}});
        };
        // Every task gets its compute event; transfers only when there are any.
        const auto record = [&](EventPart part, uint64_t cycles) {
          if (cycles == 0 && part != EventPart::Compute) return;
          event(part, now + clock, now + clock + cycles);
          clock += cycles;
        };
        HostInputLink& link = links[static_cast<size_t>(task.ipu)];
        if (costs.streamsInputs) {
          const HostInputLink::Transfer transfer = link.next(now + clock, costs.inputCycles);
          event(EventPart::HostInput, transfer.start, transfer.end);
          clock = std::max(clock, transfer.end - std::min(transfer.end, now));
        }
        record(EventPart::LinkCopy, costs.copyCycles);
        if (costs.copyCycles != 0) call.timeline.back().fromIpus = costs.copySources;
        record(EventPart::StreamingMemory, costs.streamInCycles);
        record(EventPart::Compute, costs.computeCycles - costs.copyCycles);
        record(EventPart::StreamingMemory, costs.streamOutCycles);
        if (costs.streamsInputs) link.finishedReading(now + clock);
        if (setup.hostOutputs) {
          for (uint64_t cycles : setup.hostOutputs(scheduled.task, microBatch)) {
            record(EventPart::HostOutput, cycles);
          }
        }
      }
      now += longestOf(busy) + setup.syncCycles;
      if (step == 0) call.computeCyclesOfFirstStep += longestOf(computing) + setup.syncCycles;
      ++cycleIndex;
    }
  }
  call.cycles = now;
  return call;
}

} // namespace popsim::runtime
