// The planners around the memory plan: which variables go off chip, what
// each op streams from Streaming Memory, and what transient memory (op
// temporaries, streamed-in tensors) adds beyond the activation arena.

#include "ir/graph.h"
#include "memory/memory_plan.h"
#include "memory/off_chip_placement.h"
#include "memory/stash_plan.h"
#include "memory/streaming_plan.h"
#include "memory/transient_memory.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::OpKind;
using ir::Value;
using testing::f32;

TEST(OffChipPlacementTest, LocationsPlaceTheirKindAboveTheThreshold) {
  ir::Graph graph;
  Value* x = graph.addInput("x", f32({2, 8}));
  Value* big = graph.addWeight("big", f32({4, 8}), true);
  Value* small = graph.addWeight("small", f32({4}), true);
  Value* moments = graph.addState("big/exp_avg", f32({4, 8}), ir::StateKind::Optimizer);
  Value* y = graph.apply(OpKind::Linear, {x, big, small});
  graph.addOutput(graph.apply(
      OpKind::Add, {y, graph.apply(OpKind::ReduceSum, {moments},
                                   {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}})}));
  const memory::MemoryPlan plan = memory::planMemory(graph);
  const memory::TensorLocation onChip;
  const memory::TensorLocation offChip{false, 8};
  EXPECT_EQ(memory::offChipVariables(graph, plan, offChip, onChip, onChip),
            (std::set<const Value*>{big}));
  EXPECT_EQ(memory::offChipVariables(graph, plan, onChip, offChip, onChip),
            (std::set<const Value*>{moments}));
  EXPECT_TRUE(memory::offChipVariables(graph, plan, onChip, onChip, offChip).empty());
}

TEST(StreamingPlanTest, OpsStreamTheOffChipTensorsTheyReadAndWrite) {
  ir::Graph graph;
  Value* x = graph.addInput("x", f32({2, 8}));
  Value* w = graph.addWeight("w", f32({4, 8}), true);
  Value* y = graph.apply(OpKind::Linear, {x, w});
  graph.addOutput(y);
  const memory::MemoryPlan plan = memory::planMemory(graph);
  const std::vector<memory::StreamedBytes> streamed =
      memory::streamedBytesPerNode(graph, plan, {plan.storageRoot(w)});
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streamed[0].in, plan.footprint(w));
  EXPECT_EQ(streamed[0].out, 0u); // a linear layer writes no variable
  EXPECT_EQ(streamed[0].working, plan.footprint(w));
}

TEST(TransientMemoryTest, BudgetsFollowEachIpusProportion) {
  device::IpuSystemConfig system;
  system.numIpus = 2;
  system.memoryPerIpu = 1000;
  EXPECT_EQ(memory::temporaryBudgets(system, {{1, 0.25}}),
            (std::vector<uint64_t>{
                static_cast<uint64_t>(1000 * memory::kDefaultAvailableMemoryProportion), 250}));
}

TEST(TransientMemoryTest, TemporariesFirstFillTheArenasFreeSpace) {
  ir::Graph graph;
  Value* x = graph.addInput("x", f32({64}));
  Value* a = graph.apply(OpKind::Relu, {x}); // a live alone
  Value* b = graph.apply(OpKind::Exp, {a});  // a and b live
  Value* c = graph.apply(OpKind::Tanh, {b}); // b and c live
  graph.addOutput(graph.apply(OpKind::Add, {c, c}));
  const memory::MemoryPlan plan = memory::planMemory(graph);
  const uint64_t arena =
      plan.ipus()[0].regionBytes[static_cast<size_t>(memory::MemoryRegion::Activations)];
  const std::vector<size_t> live = plan.liveActivationBytes(0, 4);
  // Temporaries at the least busy step fit in the arena's free space there.
  std::vector<memory::OpTemporaries> temporaries(4);
  size_t quietest = 0;
  for (size_t step = 1; step < live.size(); ++step) {
    if (live[step] < live[quietest]) quietest = step;
  }
  temporaries[quietest].bytes = arena - live[quietest];
  memory::TransientMemory fits =
      memory::planTransientMemory(graph, plan, 1, temporaries, std::vector<uint64_t>(4, 0));
  EXPECT_EQ(fits.temporaries, std::vector<uint64_t>{0});
  // 100 more bytes go beyond the arena; streamed-in tensors then add on top.
  temporaries[quietest].bytes += 100;
  std::vector<uint64_t> streamed(4, 0);
  streamed[quietest] = 30;
  memory::TransientMemory beyond =
      memory::planTransientMemory(graph, plan, 1, temporaries, streamed);
  EXPECT_EQ(beyond.temporaries, std::vector<uint64_t>{100});
  EXPECT_EQ(beyond.streamedIn, std::vector<uint64_t>{30});
}

// IPU 0 runs F0 on micro-batches 0..3, then B0 on them (Grouped): a value F0
// stashes for B0 has all four micro-batches in flight; one read by the next
// run only (F0 then B0 alternating) has one.
TEST(StashPlanTest, HoldsTheMessagesInFlightAlongTheIpusOrder) {
  const size_t f0 = 0;
  const size_t b0 = 1;
  const std::vector<std::vector<size_t>> grouped = {{f0, f0, f0, f0, b0, b0, b0, b0}};
  const std::vector<std::vector<size_t>> alternating = {{f0, b0, f0, b0, f0, b0, f0, b0}};
  const std::vector<memory::StashedValue> values = {{100, f0, b0, 0, false}, {10, f0, b0, 0, true}};
  const memory::StashBytes held = memory::planStash(values, grouped, 2);
  EXPECT_EQ(held.onChip, (std::vector<uint64_t>{400, 0}));
  EXPECT_EQ(held.offChip, (std::vector<uint64_t>{40, 0}));
  EXPECT_EQ(memory::planStash(values, alternating, 1).onChip, std::vector<uint64_t>{100});
}

TEST(StashPlanTest, PrefetchBuffersAreInputsTimesTheDepthOnTheirIpu) {
  EXPECT_EQ(memory::prefetchBytes({64, 8, 16}, {0, 1, 0}, 2, 3),
            (std::vector<uint64_t>{160, 16, 0}));
}

} // namespace
} // namespace popsim
