#include "clock/simulated_clock.h"

#include "clock/host_input_link.h"
#include "common/check.h"

#include <algorithm>
#include <map>

namespace popsim::clock {
namespace {

using costs::HostOutputCost;
using costs::TaskCycles;

// One IPU's outputs (to the host, or stores to Streaming Memory) leaving
// through its IO tiles: one transfer at a time on the link, each from one of
// the IO tiles' buffers.
struct IoTileOutputs {
  uint64_t linkFree = 0;
  std::vector<uint64_t> transferEnds;

  // When the next output may be copied into a buffer: once the transfer
  // that used it before has left.
  uint64_t bufferFree() const {
    const size_t count = transferEnds.size();
    return count >= device::kIoTileBuffers ? transferEnds[count - device::kIoTileBuffers] : 0;
  }
  // Sends `cycles` from the IO tiles once the compute tiles have copied
  // them there at `ready`; returns the transfer.
  HostInputLink::Transfer send(uint64_t ready, uint64_t cycles) {
    const uint64_t start = std::max(linkFree, ready);
    linkFree = start + cycles;
    transferEnds.push_back(linkFree);
    return {start, linkFree};
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
  POPSIM_ASSERT(setup.layout != nullptr && setup.schedule != nullptr,
                "the simulated clock needs a layout, task costs and a schedule.");
  const compiler::TaskLayout& layout = *setup.layout;
  std::vector<std::string> names;
  for (const compiler::PipelineTask& task : layout.tasks()) {
    names.push_back(task.name());
  }
  const auto numIpus = static_cast<size_t>(layout.numIpus());
  std::vector<HostInputLink> links(numIpus, HostInputLink(setup.prefetchDepth));
  std::vector<HostInputLink> ioTileInputs(
      numIpus, HostInputLink(static_cast<int64_t>(device::kIoTileBuffers) - 1));
  std::vector<IoTileOutputs> ioTileOutputs(numIpus);
  std::vector<HostInputLink> ioTileLoads(
      numIpus, HostInputLink(static_cast<int64_t>(device::kIoTileBuffers) - 1));
  std::vector<IoTileOutputs> ioTileStores(numIpus);
  std::vector<uint64_t> storesDone(numIpus, 0); // each IPU's latest Streaming Memory store
  SimulatedCall call;
  uint64_t now = 0;
  uint64_t outputsLeft = 0; // the last transfer out through IO tiles has left
  int64_t cycleIndex = 0;
  for (int64_t step = 0; step < setup.steps; ++step) {
    const uint64_t stepStart = now;
    uint64_t stepOutputsLeft = 0; // the step's AccumulationLoop outputs
    for (const compiler::PipelineCycle& cycle : *setup.schedule) {
      std::map<int64_t, uint64_t> busy;
      std::map<int64_t, uint64_t> computing;
      for (const compiler::ScheduledTask& scheduled : cycle) {
        const compiler::PipelineTask& task = layout.tasks()[scheduled.task];
        const TaskCycles& costs = setup.tasks[scheduled.task];
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
        if (costs.ioTileLoadCycles != 0) {
          // Loads may not pass the IPU's earlier stores, which might hold their data.
          const HostInputLink::Transfer load =
              ioTileLoads[ipu].next(now + clock, costs.ioTileLoadCycles, storesDone[ipu]);
          event(EventPart::StreamingMemory, load.start, load.end, true);
          waitUntil(load.end);
          record(EventPart::StreamCopy, costs.ioTileLoadCopyCycles);
          ioTileLoads[ipu].finishedReading(now + clock);
        }
        record(EventPart::StreamingMemory, costs.streamInCycles);
        record(EventPart::Compute, costs.computeCycles - costs.copyCycles);
        record(EventPart::StreamingMemory, costs.streamOutCycles);
        if (costs.streamOutCycles != 0) storesDone[ipu] = now + clock;
        if (costs.ioTileStoreCycles != 0) {
          IoTileOutputs& stores = ioTileStores[ipu];
          waitUntil(stores.bufferFree());
          record(EventPart::StreamCopy, costs.ioTileStoreCopyCycles);
          const HostInputLink::Transfer store = stores.send(now + clock, costs.ioTileStoreCycles);
          event(EventPart::StreamingMemory, store.start, store.end, true);
          storesDone[ipu] = std::max(storesDone[ipu], store.end);
          outputsLeft = std::max(outputsLeft, store.end);
        }
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
            const HostInputLink::Transfer sent = outputs.send(now + clock, output.cycles);
            event(EventPart::HostOutput, sent.start, sent.end, true);
            outputsLeft = std::max(outputsLeft, sent.end);
            if (!output.acrossSteps) stepOutputsLeft = std::max(stepOutputsLeft, sent.end);
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

} // namespace popsim::clock
