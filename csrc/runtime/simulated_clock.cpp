#include "runtime/simulated_clock.h"

#include "common/check.h"
#include "runtime/host_input_link.h"

#include <algorithm>
#include <map>

namespace popsim::runtime {
namespace {

// One IPU's outputs leaving through its IO tiles: one transfer at a time on
// its host link, each from one of the IO tiles' buffers.
struct IoTileOutputs {
  uint64_t linkFree = 0;
  std::vector<uint64_t> transferEnds;

  // When the next output may be copied into a buffer: once the transfer
  // that used it before has left.
  uint64_t bufferFree() const {
    const size_t count = transferEnds.size();
    return count >= kIoTileBuffers ? transferEnds[count - kIoTileBuffers] : 0;
  }
};

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
  const auto numIpus = static_cast<size_t>(layout.numIpus());
  std::vector<HostInputLink> links(numIpus, HostInputLink(setup.prefetchDepth));
  std::vector<HostInputLink> ioTileInputs(numIpus,
                                          HostInputLink(static_cast<int64_t>(kIoTileBuffers) - 1));
  std::vector<IoTileOutputs> ioTileOutputs(numIpus);
  SimulatedCall call;
  uint64_t now = 0;
  uint64_t outputsLeft = 0; // the last output through IO tiles has left
  int64_t cycleIndex = 0;
  for (int64_t step = 0; step < setup.steps; ++step) {
    const uint64_t stepStart = now;
    uint64_t stepOutputsLeft = 0; // the step's AccumulationLoop outputs
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
        const auto event = [&](EventPart part, uint64_t start, uint64_t end, bool ioTiles) {
          call.timeline.push_back({task.ipu,
                                   names[scheduled.task],
                                   task.kind,
                                   step,
                                   microBatch,
                                   cycleIndex,
                                   part,
                                   start,
                                   end,
                                   {},
                                   ioTiles});
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
        HostInputLink& link = links[ipu];
        uint64_t hostReady = 0; // the host has prepared the inputs
        if (costs.streamsInputs) {
          const HostInputLink::Transfer transfer = link.next(now + clock, costs.inputLatencyCycles);
          event(EventPart::HostInput, transfer.start, transfer.end, false);
          hostReady = transfer.end;
          if (costs.inputDataCycles != 0) {
            waitUntil(transfer.end);
            record(EventPart::StreamCopy, costs.inputDataCycles);
          }
        }
        if (costs.streamsOverlappedInputs) {
          const uint64_t loopStart = costs.overlapAcrossSteps ? 0 : stepStart;
          const HostInputLink::Transfer transfer = ioTileInputs[ipu].next(
              now + clock, costs.overlappedInputCycles, std::max(hostReady, loopStart));
          event(EventPart::HostInput, transfer.start, transfer.end, true);
          waitUntil(transfer.end);
          record(EventPart::StreamCopy, costs.ioTileInputCycles);
          ioTileInputs[ipu].finishedReading(now + clock);
        }
        record(EventPart::LinkCopy, costs.copyCycles);
        if (costs.copyCycles != 0) call.timeline.back().fromIpus = costs.copySources;
        record(EventPart::StreamingMemory, costs.streamInCycles);
        record(EventPart::Compute, costs.computeCycles - costs.copyCycles);
        record(EventPart::StreamingMemory, costs.streamOutCycles);
        if (costs.streamsInputs) link.finishedReading(now + clock);
        if (setup.hostOutputs) {
          for (const HostOutputCost& output : setup.hostOutputs(scheduled.task, microBatch)) {
            if (!output.ioTiles) {
              record(EventPart::HostOutput, output.cycles);
              continue;
            }
            IoTileOutputs& outputs = ioTileOutputs[ipu];
            waitUntil(outputs.bufferFree());
            record(EventPart::StreamCopy, output.ioTileCycles);
            const uint64_t start = std::max(outputs.linkFree, now + clock);
            outputs.linkFree = start + output.cycles;
            outputs.transferEnds.push_back(outputs.linkFree);
            event(EventPart::HostOutput, start, outputs.linkFree, true);
            outputsLeft = std::max(outputsLeft, outputs.linkFree);
            if (!output.acrossSteps) stepOutputsLeft = std::max(stepOutputsLeft, outputs.linkFree);
          }
        }
      }
      now += longestOf(busy) + setup.syncCycles;
      if (step == 0) call.computeCyclesOfFirstStep += longestOf(computing) + setup.syncCycles;
      ++cycleIndex;
    }
    now = std::max(now, stepOutputsLeft); // the accumulation loop ends with its outputs
  }
  call.cycles = std::max(now, outputsLeft);
  return call;
}

} // namespace popsim::runtime
