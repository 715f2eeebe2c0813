// The simulated clock's lockstep replay: pipeline cycles last as long as
// their busiest IPU plus a sync, host inputs stream ahead of their tasks as
// far as the prefetch depth allows, and every task run leaves its events.

#include "ir/graph.h"
#include "runtime/simulated_clock.h"
#include "runtime/staged_layout.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using runtime::EventPart;

struct Replay {
  ir::Graph graph;
  passes::TaskLayout layout = testing::stagedLayout(graph, 2, false); // F0 on IPU 0, F1 on IPU 1
  std::vector<runtime::TaskCycles> tasks{2};
  std::vector<runtime::PipelineCycle> schedule =
      runtime::buildSchedule(layout, 3, runtime::ScheduleKind::Interleaved);

  runtime::SimulatedCall run(int64_t prefetchDepth, uint64_t outputCycles) {
    runtime::ClockSetup setup;
    setup.layout = &layout;
    setup.tasks = &tasks;
    setup.schedule = &schedule;
    setup.microBatchesPerStep = 3;
    setup.prefetchDepth = prefetchDepth;
    setup.syncCycles = 10;
    setup.hostOutputs = [&](size_t task, int64_t) {
      return task == 1 ? std::vector<uint64_t>{outputCycles} : std::vector<uint64_t>{};
    };
    return runtime::simulateCall(setup);
  }
};

TEST(SimulatedClockTest, CyclesLastAsLongAsTheBusiestIpuPlusASync) {
  Replay replay;
  replay.tasks[0].computeCycles = 100;
  replay.tasks[1].computeCycles = 200;
  // Cycles: F0:0 | F0:1 F1:0 | F0:2 F1:1 | F1:2, each with its outputs.
  const runtime::SimulatedCall call = replay.run(1, 20);
  EXPECT_EQ(call.cycles, (100 + 10) + 3 * (200 + 20 + 10));
  EXPECT_EQ(call.computeCyclesOfFirstStep, (100 + 10) + 3 * (200 + 10));
  int computeEvents = 0;
  int outputEvents = 0;
  for (const runtime::TimelineEvent& event : call.timeline) {
    computeEvents += event.part == EventPart::Compute;
    outputEvents += event.part == EventPart::HostOutput;
  }
  EXPECT_EQ(computeEvents, 6);
  EXPECT_EQ(outputEvents, 3);
  EXPECT_EQ(call.timeline.back().task, "F1");
  EXPECT_EQ(call.timeline.back().microBatch, 2);
  EXPECT_EQ(call.timeline.back().cycle, 3);
}

TEST(SimulatedClockTest, PrefetchedInputsOverlapTheWorkBefore) {
  Replay replay;
  replay.tasks[0] = {100, 0, {}, true, 300, 0, 0};
  replay.tasks[1].computeCycles = 100;
  // Without prefetch each input streams when its task starts: F0 takes 400
  // cycles a micro-batch. With it, the link streams the next input while F0
  // computes and while the IPUs sync, so from the second micro-batch on a
  // cycle lasts one transfer, the link being the slowest stage.
  const uint64_t streamed = replay.run(0, 0).cycles;
  const uint64_t prefetched = replay.run(1, 0).cycles;
  EXPECT_EQ(streamed, 3 * (400 + 10) + (100 + 10));
  EXPECT_EQ(prefetched, (400 + 10) + 2 * 300 + (100 + 10));
}

} // namespace
} // namespace popsim
