// The host's device program: a replicated call is each replica's call on its
// share of the batch, joined as Python joins them; sharded and grouped
// variables split on writes and join on reads; a cost-only program replays
// the clock, drops writes and refuses reads.

#include "host/call_layout.h"
#include "host/device_program.h"
#include "ir/graph.h"
#include "runtime/executable.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;
using runtime::TensorView;
using testing::f32;

TensorView viewOf(std::vector<float>& values, ir::Shape shape) {
  return {values.data(), ir::DType::Float32, std::move(shape)};
}

// x[2,3] * w[3] (w broadcast along rows), and the sum of the product as a
// scalar second output; every micro-batch's outputs are returned.
std::shared_ptr<runtime::Executable> scaling(int64_t iterations, bool costOnly = false) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* w = graph.addWeight("w", f32({3}), true);
  Value* y = graph.apply(OpKind::Mul, {x, w});
  graph.addOutput(y);
  graph.addOutput(graph.apply(OpKind::ReduceSum, {y},
                              {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}));
  runtime::CompileOptions options;
  options.compiler.deviceIterations = iterations;
  options.compiler.output.mode = compiler::OutputMode::All;
  options.kernels.costOnly = costOnly;
  return runtime::Executable::compile(graph, options);
}

host::CallLayout layoutOf(int64_t steps, std::vector<int64_t> parts) {
  host::CallLayout layout;
  layout.steps = steps;
  layout.inputPartOf = std::move(parts);
  layout.outputSlots = {steps, steps};
  return layout;
}

host::Replication replicasOf(int64_t count) {
  host::Replication replication;
  replication.local = count;
  replication.inputParts = count;
  replication.inputPartOf.resize(static_cast<size_t>(count));
  std::iota(replication.inputPartOf.begin(), replication.inputPartOf.end(), 0);
  return replication;
}

TEST(CallLayoutTest, EachReplicaTakesItsPartOfEveryStep) {
  const host::CallLayout layout = layoutOf(2, {0, 1, 0});
  // Rows: step 0 part 0, step 0 part 1, step 1 part 0, step 1 part 1.
  std::vector<float> call = {0, 1, 2, 3};
  std::vector<float> share(2);
  layout.copyReplicaInput(viewOf(call, {4}), 1, share.data());
  EXPECT_EQ(share, (std::vector<float>{1, 3}));
  layout.copyReplicaInput(viewOf(call, {4}), 2, share.data()); // the same part as replica 0
  EXPECT_EQ(share, (std::vector<float>{0, 2}));
  EXPECT_EQ(layout.replicaInputType(f32({4, 5})).shape, (ir::Shape{2, 5}));
  // Outputs: per slot, every replica's in replica order; scalars stacked.
  std::vector<float> joined(6);
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<float> mine = {float(10 * r), float(10 * r + 1)};
    layout.copyReplicaOutput(0, mine.data(), f32({2}), r, viewOf(joined, {6}));
  }
  EXPECT_EQ(joined, (std::vector<float>{0, 10, 20, 1, 11, 21}));
  EXPECT_EQ(layout.callOutputType(f32({})).shape, (ir::Shape{3}));
}

TEST(DeviceProgramTest, ReplicasRunTheirSharesAndJoinTheirOutputs) {
  std::unique_ptr<host::DeviceProgram> program =
      host::makeDeviceProgram(scaling(2), replicasOf(2), layoutOf(2, {0, 1}));
  EXPECT_FALSE(program->costOnly());
  ASSERT_EQ(program->executables().size(), 2u);
  EXPECT_EQ(program->inputTypes()[0].shape, (ir::Shape{8, 3}));
  EXPECT_EQ(program->outputTypes()[1].shape, (ir::Shape{4})); // a sum per micro-batch
  std::vector<float> w = {1, 2, 3};
  program->writeVariables({{"w", viewOf(w, {3})}}); // every replica's
  std::vector<float> x(24);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<float> y(24), sums(4);
  program->run({viewOf(x, {8, 3})}, {viewOf(y, {8, 3}), viewOf(sums, {4})});
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], x[i] * w[i % 3]) << i; // the rows keep their places
  // Sums: step 0 replica 0 (rows 0-1), replica 1 (rows 2-3), then step 1.
  for (size_t k = 0; k < 4; ++k) {
    float expected = 0;
    for (size_t i = 6 * k; i < 6 * k + 6; ++i)
      expected += y[i];
    EXPECT_EQ(sums[k], expected) << k;
  }
  std::vector<float> back(3);
  program->readVariables({{"w", viewOf(back, {3})}});
  EXPECT_EQ(back, w);
}

TEST(DeviceProgramTest, GroupedVariablesGiveEachReplicaItsGroupsRow) {
  std::unique_ptr<host::DeviceProgram> program =
      host::makeDeviceProgram(scaling(1), replicasOf(2), layoutOf(1, {0, 1}));
  program->groupVariables({{"w", {0, 1}}});
  EXPECT_EQ(program->variableType("w").shape, (ir::Shape{2, 3}));
  std::vector<float> rows = {1, 1, 1, 2, 2, 2};
  program->writeVariables({{"w", viewOf(rows, {2, 3})}});
  std::vector<float> x(12, 1.0f), y(12), sums(2);
  program->run({viewOf(x, {4, 3})}, {viewOf(y, {4, 3}), viewOf(sums, {2})});
  EXPECT_EQ(sums, (std::vector<float>{6, 12})); // replica 1 scaled by its row
  std::vector<float> back(6);
  program->readVariables({{"w", viewOf(back, {2, 3})}});
  EXPECT_EQ(back, rows);
}

TEST(DeviceProgramTest, ShardedVariablesSplitOnWritesAndJoinOnReads) {
  // Each of 2 replicas holds a shard of 2 of a weight of 3 elements (zero-padded).
  Graph graph;
  Value* x = graph.addInput("x", f32({1, 2}));
  graph.addOutput(graph.apply(OpKind::Mul, {x, graph.addWeight("w", f32({2}), true)}));
  const std::shared_ptr<runtime::Executable> executable =
      runtime::Executable::compile(graph, runtime::CompileOptions{});
  host::CallLayout layout = layoutOf(1, {0, 1});
  layout.outputSlots = {1};
  std::unique_ptr<host::DeviceProgram> program =
      host::makeDeviceProgram(executable, replicasOf(2), layout);
  program->shardVariables({{"w", {3}}});
  EXPECT_EQ(program->variableType("w").shape, (ir::Shape{3}));
  std::vector<float> whole = {1, 2, 3};
  program->writeVariables({{"w", viewOf(whole, {3})}});
  std::vector<float> x1(4, 1.0f), y(4);
  program->run({viewOf(x1, {2, 2})}, {viewOf(y, {2, 2})});
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 0})); // each replica scaled by its shard
  std::vector<float> back(3);
  program->readVariables({{"w", viewOf(back, {3})}});
  EXPECT_EQ(back, whole);
}

TEST(DeviceProgramTest, ACostOnlyProgramStandsForEveryReplica) {
  std::unique_ptr<host::DeviceProgram> program =
      host::makeDeviceProgram(scaling(2, true), replicasOf(4), layoutOf(2, {0, 1, 2, 3}));
  EXPECT_TRUE(program->costOnly());
  EXPECT_EQ(program->executables().size(), 1u);
  EXPECT_EQ(program->inputTypes()[0].shape, (ir::Shape{16, 3}));
  program->run({{nullptr, ir::DType::Float32, {16, 3}}}, {});
  EXPECT_GT(program->first().lastRunCycles(), 0u);
  std::vector<float> w = {1, 2, 3};
  program->writeVariables({{"w", viewOf(w, {3})}}); // checked, then dropped
  std::vector<float> wrong(4);
  EXPECT_THROW(program->writeVariables({{"w", viewOf(wrong, {4})}}), CoreError);
  EXPECT_THROW(program->readVariables({{"w", viewOf(w, {3})}}), CoreError);
  EXPECT_THROW(program->run({{nullptr, ir::DType::Float32, {8, 3}}}, {}), CoreError);
}

} // namespace
} // namespace popsim
