// Pipeline schedules and the channels between tasks.

#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_schedule.h"
#include "ir/graph.h"
#include "runtime/channel.h"
#include "runtime/staged_layout.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <thread>

namespace popsim {
namespace {

using compiler::ScheduleKind;

// A training layout with `stages` stages, one per IPU.
compiler::TaskLayout trainingLayout(ir::Graph& graph, int64_t stages) {
  return testing::stagedLayout(graph, stages, true);
}

// "F0:0" for task F0 on micro-batch 0.
std::vector<std::string> describe(const compiler::TaskLayout& layout,
                                  const compiler::PipelineCycle& cycle) {
  std::vector<std::string> names;
  for (const compiler::ScheduledTask& task : cycle) {
    names.push_back(layout.tasks()[task.task].name() + ":" + std::to_string(task.microBatch));
  }
  return names;
}

TEST(PipelineScheduleTest, InterleavedRunsEveryPipelineStageEachCycle) {
  ir::Graph graph;
  const compiler::TaskLayout layout = trainingLayout(graph, 2); // F0 FB1 B0, U0 U1
  const auto cycles = compiler::buildSchedule(layout, 3, ScheduleKind::Interleaved);
  ASSERT_EQ(cycles.size(), 3u + 3u - 1u + 1u);
  EXPECT_EQ(describe(layout, cycles[0]), (std::vector<std::string>{"F0:0"}));
  EXPECT_EQ(describe(layout, cycles[2]), (std::vector<std::string>{"F0:2", "FB1:1", "B0:0"}));
  EXPECT_EQ(describe(layout, cycles[4]), (std::vector<std::string>{"B0:2"}));
  EXPECT_EQ(describe(layout, cycles[5]), (std::vector<std::string>{"U0:-1", "U1:-1"}));
}

TEST(PipelineScheduleTest, GradientNormTasksRunAsOneCycleBeforeTheUpdates) {
  ir::Graph graph;
  compiler::TaskLayout layout = trainingLayout(graph, 2);
  // A gradient-norm op on IPU 1 (gradient clipping) adds N0 and N1.
  ir::Node* norm = graph.addNode(ir::OpKind::Relu, {graph.inputs()[0]});
  ir::Placement placement = graph.nodes().front()->placement();
  placement.ipu = 1;
  placement.phase = ir::Phase::GradientNorm;
  norm->setPlacement(placement);
  layout = compiler::TaskLayout(graph, true);
  std::vector<std::string> names;
  for (const compiler::PipelineTask& task : layout.tasks())
    names.push_back(task.name());
  EXPECT_EQ(names, (std::vector<std::string>{"F0", "FB1", "B0", "N0", "N1", "U0", "U1"}));
  EXPECT_EQ(layout.tasks()[layout.taskOf(*norm)].name(), "N1");
  EXPECT_FALSE(layout.tasks()[3].perMicroBatch());
  const auto cycles = compiler::buildSchedule(layout, 2, ScheduleKind::Interleaved);
  ASSERT_EQ(cycles.size(), 2u + 3u - 1u + 2u);
  EXPECT_EQ(describe(layout, cycles[4]), (std::vector<std::string>{"N0:-1", "N1:-1"}));
  EXPECT_EQ(describe(layout, cycles[5]), (std::vector<std::string>{"U0:-1", "U1:-1"}));
}

TEST(PipelineScheduleTest, GroupedRunsAllForwardsFirst) {
  ir::Graph graph;
  const compiler::TaskLayout layout = trainingLayout(graph, 2);
  const auto cycles = compiler::buildSchedule(layout, 3, ScheduleKind::Grouped);
  ASSERT_EQ(cycles.size(), (3u + 1u) + 3u + 1u);
  EXPECT_EQ(describe(layout, cycles[3]), (std::vector<std::string>{"FB1:2"}));
  EXPECT_EQ(describe(layout, cycles[4]), (std::vector<std::string>{"B0:0"}));
}

TEST(PipelineScheduleTest, SequentialRunsOneTaskPerCycle) {
  ir::Graph graph;
  const compiler::TaskLayout layout = trainingLayout(graph, 3);
  const auto cycles = compiler::buildSchedule(layout, 2, ScheduleKind::Sequential);
  ASSERT_EQ(cycles.size(), 2u * 5u + 1u);
  EXPECT_EQ(describe(layout, cycles[5]), (std::vector<std::string>{"F0:1"}));
}

TEST(ChannelTest, MessagesArriveInOrderAcrossThreads) {
  runtime::Channel channel(sizeof(int));
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i)
      channel.push(&i);
  });
  for (int i = 0; i < 100; ++i) {
    int value = -1;
    channel.pop(&value);
    EXPECT_EQ(value, i);
  }
  producer.join();
  EXPECT_EQ(channel.size(), 0u);
}

TEST(ChannelTest, AbortWakesAWaitingReader) {
  runtime::Channel channel(4);
  std::thread reader([&] {
    int value = 0;
    EXPECT_THROW(channel.pop(&value), runtime::ChannelAborted);
  });
  channel.abort();
  reader.join();
  channel.reset();
  const int one = 1;
  channel.push(&one);
  int value = 0;
  channel.pop(&value);
  EXPECT_EQ(value, 1);
}

} // namespace
} // namespace popsim
