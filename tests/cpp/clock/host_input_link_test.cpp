// The host link's input streams against timelines worked out by hand: each
// task reads one transfer and runs right after the previous task, unless its
// transfer is still in flight.

#include "clock/host_input_link.h"

#include <gtest/gtest.h>

#include <vector>

namespace popsim {
namespace {

using clock::HostInputLink;

struct LinkRun {
  std::vector<uint64_t> transferStarts;
  std::vector<uint64_t> taskEnds;
};

LinkRun runTasks(int64_t depth, int tasks, uint64_t transferCycles, uint64_t taskCycles) {
  HostInputLink link(depth);
  LinkRun run;
  uint64_t clock = 0;
  for (int k = 0; k < tasks; ++k) {
    const HostInputLink::Transfer transfer = link.next(clock, transferCycles);
    EXPECT_EQ(transfer.end - transfer.start, transferCycles);
    clock = std::max(clock, transfer.end) + taskCycles;
    link.finishedReading(clock);
    run.transferStarts.push_back(transfer.start);
    run.taskEnds.push_back(clock);
  }
  return run;
}

TEST(HostInputLinkTest, WithoutPrefetchEachTransferWaitsForItsTask) {
  const LinkRun run = runTasks(0, 3, 10, 30);
  EXPECT_EQ(run.transferStarts, (std::vector<uint64_t>{0, 40, 80}));
  EXPECT_EQ(run.taskEnds, (std::vector<uint64_t>{40, 80, 120}));
}

TEST(HostInputLinkTest, DepthOneStreamsTheNextInputWhileATaskComputes) {
  // Transfer 1 follows transfer 0 at once (a free buffer); transfer k >= 2
  // waits for task k-2 to free its buffer, then overlaps task k-1.
  const LinkRun run = runTasks(1, 4, 10, 30);
  EXPECT_EQ(run.transferStarts, (std::vector<uint64_t>{0, 10, 40, 70}));
  EXPECT_EQ(run.taskEnds, (std::vector<uint64_t>{40, 70, 100, 130}));
}

TEST(HostInputLinkTest, DepthTwoRunsTwoTransfersAhead) {
  const LinkRun run = runTasks(2, 5, 10, 30);
  EXPECT_EQ(run.transferStarts, (std::vector<uint64_t>{0, 10, 20, 40, 70}));
  EXPECT_EQ(run.taskEnds, (std::vector<uint64_t>{40, 70, 100, 130, 160}));
}

TEST(HostInputLinkTest, ASlowLinkBoundsTheTasksWhateverTheDepth) {
  // Transfers of 50 cycles feed tasks of 20: the link is busy all the time
  // and each task ends 20 cycles after its transfer.
  for (int64_t depth : {1, 2, 3}) {
    const LinkRun run = runTasks(depth, 4, 50, 20);
    EXPECT_EQ(run.transferStarts, (std::vector<uint64_t>{0, 50, 100, 150})) << depth;
    EXPECT_EQ(run.taskEnds, (std::vector<uint64_t>{70, 120, 170, 220})) << depth;
  }
}

TEST(HostInputLinkTest, ATransferNeverStartsBeforeItsBufferIsFree) {
  // Depth 1 with tasks that start late (other work in between): transfer 2
  // waits for task 0, however long the link has been idle.
  HostInputLink link(1);
  EXPECT_EQ(link.next(0, 10).start, 0u);
  link.finishedReading(500);
  EXPECT_EQ(link.next(500, 10).start, 10u);
  link.finishedReading(900);
  EXPECT_EQ(link.next(900, 10).start, 500u);
}

} // namespace
} // namespace popsim
