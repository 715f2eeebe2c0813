// The simulated clock's lockstep replay: pipeline cycles last as long as
// their busiest IPU plus a sync (under SyncPattern.Full, no IPU works during
// another's host exchange), the host's part of each input streams
// ahead of its task as far as the prefetch depth allows (the bytes then
// occupy the IPU), inputs and outputs through IO tiles overlap the compute
// within their loop, and every task run leaves its events.

#include "clock/simulated_clock.h"
#include "ir/graph.h"
#include "runtime/staged_layout.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using clock::EventPart;

struct Replay {
  ir::Graph graph;
  compiler::TaskLayout layout = testing::stagedLayout(graph, 2, false); // F0 on IPU 0, F1 on IPU 1
  std::vector<costs::TaskCycles> tasks{2};
  std::vector<compiler::PipelineCycle> schedule =
      compiler::buildSchedule(layout, 3, compiler::ScheduleKind::Interleaved);

  costs::HostOutputCost output; // F1's, when it has cycles

  bool hostExchangesStallEveryIpu = true; // SyncPattern.Full

  clock::SimulatedCall run(int64_t inputsPreparedAhead, uint64_t outputCycles, int64_t steps = 1) {
    output.cycles = outputCycles;
    clock::ClockSetup setup;
    setup.layout = &layout;
    setup.tasks = tasks;
    setup.schedule = &schedule;
    setup.steps = steps;
    setup.microBatchesPerStep = 3;
    setup.inputsPreparedAhead = inputsPreparedAhead;
    setup.syncCycles = 10;
    setup.hostExchangesStallEveryIpu = hostExchangesStallEveryIpu;
    setup.hostOutputs = [&](size_t task, int64_t) {
      std::vector<costs::HostOutputCost> outputs;
      if (task == 1 && output.cycles != 0) outputs.push_back(output);
      return outputs;
    };
    return clock::simulateCall(setup);
  }

  // F0 streams its inputs: the host prepares each in 100 cycles, its bytes
  // take 200 (through the IO tiles, or its compute tiles), and the IO tiles'
  // copy to the compute tiles 5.
  void streamInputs(bool ioTiles, bool acrossSteps = true) {
    tasks[0].computeCycles = 100;
    tasks[0].streamsInputs = true;
    tasks[0].inputLatencyCycles = 100;
    if (ioTiles) {
      tasks[0].streamsOverlappedInputs = true;
      tasks[0].overlappedInputCycles = 200;
      tasks[0].ioTileInputCycles = 5;
      tasks[0].overlapAcrossSteps = acrossSteps;
    } else {
      tasks[0].inputDataCycles = 200;
    }
    tasks[1].computeCycles = 100;
  }
};

TEST(SimulatedClockTest, CyclesLastAsLongAsTheBusiestIpuPlusASync) {
  Replay replay;
  replay.tasks[0].computeCycles = 100;
  replay.tasks[1].computeCycles = 200;
  // Cycles: F0:0 | F0:1 F1:0 | F0:2 F1:1 | F1:2, each with its outputs.
  const clock::SimulatedCall call = replay.run(1, 20);
  EXPECT_EQ(call.cycles, (100 + 10) + 3 * (200 + 20 + 10));
  EXPECT_EQ(call.computeCyclesOfFirstStep, (100 + 10) + 3 * (200 + 10));
  int computeEvents = 0;
  int outputEvents = 0;
  for (const clock::TimelineEvent& event : call.timeline) {
    computeEvents += event.part == EventPart::Compute;
    outputEvents += event.part == EventPart::HostOutput;
  }
  EXPECT_EQ(computeEvents, 6);
  EXPECT_EQ(outputEvents, 3);
  EXPECT_EQ(call.timeline.back().task, "F1");
  EXPECT_EQ(call.timeline.back().microBatch, 2);
  EXPECT_EQ(call.timeline.back().cycle, 3);
}

TEST(SimulatedClockTest, PrefetchingHidesTheHostsPartOfEachInput) {
  Replay replay;
  replay.tasks[0].computeCycles = 100;
  replay.tasks[0].streamsInputs = true;
  replay.tasks[0].inputLatencyCycles = 300;
  replay.tasks[0].inputDataCycles = 50;
  replay.tasks[1].computeCycles = 100;
  // Without prefetch each input streams when its task starts: F0 takes 450
  // cycles a micro-batch. With it, the link prepares the next input while F0
  // receives and computes and while the IPUs sync, so from the second
  // micro-batch on a cycle lasts one latency, the link being the slowest
  // stage; the bytes still cross on F0's compute tiles.
  const uint64_t streamed = replay.run(0, 0).cycles;
  const clock::SimulatedCall prefetched = replay.run(1, 0);
  EXPECT_EQ(streamed, 3 * (450 + 10) + (100 + 10));
  EXPECT_EQ(prefetched.cycles, (450 + 10) + 2 * 300 + (100 + 10));
  int copies = 0;
  for (const clock::TimelineEvent& event : prefetched.timeline) {
    if (event.part != EventPart::StreamCopy) continue;
    ++copies;
    EXPECT_EQ(event.end - event.start, 50u);
    EXPECT_FALSE(event.ioTiles);
  }
  EXPECT_EQ(copies, 3);
}

TEST(SimulatedClockTest, InputsThroughIoTilesCostTheComputeTilesOnlyTheirCopy) {
  Replay plain;
  plain.streamInputs(false);
  // Through the compute tiles, F0 receives 200 cycles of bytes, then
  // computes 100, a micro-batch per 310 cycles.
  EXPECT_EQ(plain.run(2, 0).cycles, (100 + 300 + 10) + 2 * (300 + 10) + (100 + 10));
  Replay overlapped;
  overlapped.streamInputs(true);
  // Through the IO tiles, the bytes cross while F0 computes, into two
  // buffers, and F0 pays 5 cycles to copy each: from the second micro-batch
  // on, the IO tiles' link sets the pace.
  const clock::SimulatedCall call = overlapped.run(2, 0);
  EXPECT_EQ(call.cycles, (100 + 200 + 5 + 100 + 10) + 2 * 200 + (100 + 10));
  int ioTileInputs = 0;
  for (const clock::TimelineEvent& event : call.timeline) {
    ioTileInputs += event.part == EventPart::HostInput && event.ioTiles;
  }
  EXPECT_EQ(ioTileInputs, 3);
}

TEST(SimulatedClockTest, UnderSyncPatternFullNoIpuWorksWhileOneExchangesWithTheHost) {
  Replay full;
  full.streamInputs(false);
  full.tasks[1].computeCycles = 250;
  // Cycles: F0:0 | F0:1 F1:0 | F0:2 F1:1 | F1:2. The first input waits 100
  // cycles for the host, then each input's 200 cycles of bytes cross on
  // F0's compute tiles. Under Full, F1's 250 cycles of work follow F0's
  // host exchange; F0's own 100 fit inside them.
  EXPECT_EQ(full.run(2, 0).cycles, (300 + 100 + 10) + 2 * (200 + 250 + 10) + (250 + 10));
  Replay single;
  single.streamInputs(false);
  single.tasks[1].computeCycles = 250;
  single.hostExchangesStallEveryIpu = false; // SyncPattern.SinglePipeline
  // Each IPU syncs with the host on its own: F1 computes beside F0's
  // exchange, and F0's exchange and compute (300) set the pace.
  EXPECT_EQ(single.run(2, 0).cycles, (300 + 100 + 10) + 2 * (300 + 10) + (250 + 10));
  // Outputs through the compute tiles hold the other IPUs up alike.
  Replay outputs;
  outputs.tasks[0].computeCycles = 400;
  outputs.tasks[1].computeCycles = 100;
  EXPECT_EQ(outputs.run(0, 150).cycles, (400 + 10) + 2 * (400 + 150 + 10) + (100 + 150 + 10));
  outputs.hostExchangesStallEveryIpu = false;
  EXPECT_EQ(outputs.run(0, 150).cycles, (400 + 10) + 2 * (400 + 10) + (100 + 150 + 10));
}

TEST(SimulatedClockTest, AccumulationLoopOverlapStopsAtEachStep) {
  Replay within;
  within.streamInputs(true, false);
  Replay across;
  across.streamInputs(true, true);
  // OverlapAccumulationLoop: the second step's first input crosses once the
  // step has started; OverlapDeviceIterationLoop: during the first step's
  // last micro-batch. Within a step, both are the same.
  EXPECT_EQ(within.run(2, 0).cycles, across.run(2, 0).cycles);
  EXPECT_LT(across.run(2, 0, 2).cycles, within.run(2, 0, 2).cycles);
}

TEST(SimulatedClockTest, OutputsThroughIoTilesLeaveBesideTheCompute) {
  Replay replay;
  replay.tasks[0].computeCycles = 100;
  replay.tasks[1].computeCycles = 200;
  const uint64_t throughCompute = replay.run(0, 300).cycles;
  EXPECT_EQ(throughCompute, (100 + 10) + 3 * (200 + 300 + 10));
  replay.output.ioTiles = true;
  replay.output.ioTileCycles = 5;
  // F1 copies each output to the IO tiles (5 cycles) and goes on; the link
  // sends one every 300 cycles from the first one's copy on, and the call
  // ends when the last has left.
  const clock::SimulatedCall call = replay.run(0, 300);
  EXPECT_EQ(call.cycles, (100 + 10) + (200 + 5) + 3 * 300);
  EXPECT_TRUE(call.timeline.back().ioTiles);
  EXPECT_EQ(call.timeline.back().part, EventPart::HostOutput);
}

TEST(SimulatedClockTest, StreamingMemoryLoadsThroughIoTilesWaitForTheIpusEarlierStores) {
  Replay replay;
  replay.tasks[0].computeCycles = 100;
  replay.tasks[0].ioTileLoadCycles = 300;
  replay.tasks[0].ioTileLoadCopyCycles = 5;
  replay.tasks[0].ioTileStoreCycles = 200;
  replay.tasks[0].ioTileStoreCopyCycles = 5;
  replay.tasks[1].computeCycles = 100;
  // F0 loads what it stored the micro-batch before, so each load waits for
  // that store to leave: the link's load, copy, compute, copy and store
  // follow each other, and the call ends when the last store has left.
  const clock::SimulatedCall call = replay.run(1, 0);
  EXPECT_EQ(call.cycles, 3 * (300 + 5 + 100 + 5 + 200));
  int onIoTiles = 0;
  for (const clock::TimelineEvent& event : call.timeline) {
    onIoTiles += event.part == EventPart::StreamingMemory && event.ioTiles;
  }
  EXPECT_EQ(onIoTiles, 6);
}

} // namespace
} // namespace popsim
