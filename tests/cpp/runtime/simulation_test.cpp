// The stages after import, one at a time, on plain data: the compiler's
// Program, the memory stage's ProgramMemory, the cost stage's CostTable and
// the clock's replay, each built from the previous one and inspected; then
// runtime::simulate, which chains them without binding any kernel, against
// an Executable of the same graph (which binds kernels and runs).

#include "clock/call_setup.h"
#include "common/error.h"
#include "compiler/compile_program.h"
#include "costs/cost_table.h"
#include "ir/graph.h"
#include "memory/program_memory.h"
#include "runtime/executable.h"
#include "runtime/simulation.h"
#include "runtime/two_blocks.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <set>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;
using testing::f32;
using testing::inBlock;
using testing::twoBlocks;

// Two stages on two IPUs, pipelined over four micro-batches per call.
runtime::CompileOptions pipelined() {
  runtime::CompileOptions options;
  options.system.numIpus = 2;
  options.compiler.stages = {{"A", 0, 0}, {"B", 1, 1}};
  options.compiler.deviceIterations = 4;
  return options;
}

TEST(SimulationTest, EachStageIsPlainDataBuiltFromThePreviousOne) {
  const auto graph = twoBlocks();
  const runtime::CompileOptions options = pipelined();

  // Compiler: the optimised graph, its tasks and the cycles of a step.
  const compiler::Program program =
      compiler::compileProgram(*graph, options.compiler, options.system);
  EXPECT_EQ(program.layout.numIpus(), 2);
  EXPECT_EQ(program.layout.numStages(), 2);
  EXPECT_EQ(program.microBatchesPerCall(), 4);
  // Interleaved: F0 alone, then F0 and F1 side by side, ..., then F1 alone.
  EXPECT_EQ(program.schedule.size(), 5u);
  EXPECT_EQ(program.ipuOrders().size(), 2u);

  // Memory: a slot for every value, and a report per IPU whose weights are
  // that IPU's stage's.
  const memory::ProgramMemory memory =
      memory::planProgramMemory(program, options.memory, options.system);
  ASSERT_EQ(memory.report.ipus.size(), 2u);
  EXPECT_EQ(memory.temporaries.size(), program.graph->nodes().size());
  const auto weightBytes = [&](size_t ipu) {
    for (const memory::MemoryCategory& category : memory.report.ipus[ipu].categories) {
      if (category.name == "weights") return category.bytes;
    }
    return uint64_t{0};
  };
  EXPECT_EQ(weightBytes(0), 32u * 16 * 4);
  EXPECT_EQ(weightBytes(1), 4u * 32 * 4);
  EXPECT_NO_THROW(memory::checkMemoryFits(memory.report, options.system));

  // Costs: every op and every task, from the chip's figures.
  const costs::CostTable costs = costs::buildCostTable(program, memory, options.system);
  EXPECT_EQ(costs.ops.size(), program.graph->nodes().size());
  ASSERT_EQ(costs.tasks.size(), program.layout.tasks().size());
  for (const costs::TaskCycles& task : costs.tasks) {
    EXPECT_GT(task.computeCycles, 0u);
  }
  // The second stage receives the first's activations over the IPU link.
  EXPECT_GT(costs.tasks[1].copyCycles, 0u);
  EXPECT_EQ(costs.tasks[1].copySources, (std::vector<int64_t>{0}));
  EXPECT_GT(costs.syncCycles, 0u);

  // Clock: one call replayed; both IPUs work, and at once.
  const clock::SimulatedCall call =
      clock::simulateCall(clock::callSetup(program, memory, costs, options.clock));
  EXPECT_GT(call.cycles, 0u);
  std::set<int64_t> ipus;
  for (const clock::TimelineEvent& event : call.timeline) {
    ipus.insert(event.ipu);
  }
  EXPECT_EQ(ipus, (std::set<int64_t>{0, 1}));
  // The IPUs work at once (here IPU 0 takes in a micro-batch from the host
  // while IPU 1 computes the previous one): the call is shorter than its
  // events end to end.
  uint64_t busy = 0;
  for (const clock::TimelineEvent& event : call.timeline) {
    busy += event.end - event.start;
  }
  EXPECT_LT(call.cycles, busy);
}

TEST(SimulationTest, SimulatingIsRunningWithoutKernels) {
  const auto graph = twoBlocks();
  const runtime::CompileOptions options = pipelined();
  const runtime::Simulation simulation = runtime::simulate(*graph, options);
  const auto executable = runtime::Executable::compile(*graph, options);

  // The executable is the same simulation with kernels bound to it.
  EXPECT_EQ(simulation.call.cycles, executable->simulation().call.cycles);
  ASSERT_EQ(simulation.memory.report.ipus.size(), executable->memoryReport().ipus.size());
  for (size_t ipu = 0; ipu < simulation.memory.report.ipus.size(); ++ipu) {
    EXPECT_EQ(simulation.memory.report.ipus[ipu].total(),
              executable->memoryReport().ipus[ipu].total());
  }
  // And a call it runs takes the simulated time the replay found.
  std::vector<float> x(4 * 8 * 16, 0.5f);
  std::vector<float> y(4 * 8 * 4);
  executable->run({{x.data(), ir::DType::Float32, {32, 16}}},
                  {{y.data(), ir::DType::Float32, {32, 4}}});
  EXPECT_EQ(executable->lastRunCycles(), simulation.call.cycles);
  EXPECT_EQ(executable->lastTimeline().size(), simulation.call.timeline.size());
}

TEST(SimulationTest, ACostOnlyExecutableBindsNothingAndReplaysTheClock) {
  const auto graph = twoBlocks();
  runtime::CompileOptions options = pipelined();
  options.kernels.costOnly = true;
  const auto executable = runtime::Executable::compile(*graph, options);
  EXPECT_TRUE(executable->costOnly());
  EXPECT_EQ(executable->program().size(), executable->graph().nodes().size());
  EXPECT_EQ(executable->program()[0].implementation, "none (cost-only)");
  // A call checks its inputs' types, reads no value and writes no output.
  executable->run({{nullptr, ir::DType::Float32, {32, 16}}}, {});
  EXPECT_EQ(executable->lastRunCycles(), runtime::simulate(*graph, pipelined()).call.cycles);
  const CoreError wrong = testing::captureError([&] {
    executable->run({{nullptr, ir::DType::Float32, {8, 16}}}, {});
  });
  EXPECT_EQ(wrong.kind(), ErrorKind::InvalidInput);
  // Writes are checked, then dropped; reads are refused, naming the option.
  std::vector<float> weight(32 * 16, 1.0f);
  executable->writeVariable("a.weight", {weight.data(), ir::DType::Float32, {32, 16}});
  EXPECT_EQ(testing::captureError([&] {
              executable->writeVariable("a.weight", {weight.data(), ir::DType::Float32, {16}});
            }).kind(),
            ErrorKind::InvalidInput);
  const CoreError read = testing::captureError([&] {
    executable->readVariable("a.weight", {weight.data(), ir::DType::Float32, {32, 16}});
  });
  EXPECT_EQ(read.kind(), ErrorKind::InvalidInput);
  EXPECT_TRUE(testing::contains(read.what(), "weight 'a.weight' has no value: the model was "
                                             "compiled cost-only (Simulator.costOnly)"));
}

TEST(SimulationTest, TheMemoryStageReportsAProgramThatDoesNotFit) {
  const auto graph = twoBlocks();
  runtime::CompileOptions options = pipelined();
  options.system.memoryPerIpu = 4096;
  const compiler::Program program =
      compiler::compileProgram(*graph, options.compiler, options.system);
  // Planning is not refusing: a sizing run can show what does not fit.
  const memory::ProgramMemory memory =
      memory::planProgramMemory(program, options.memory, options.system);
  EXPECT_GT(memory.report.ipus[0].total(), memory.report.ipus[0].capacity);
  const CoreError error =
      testing::captureError([&] { memory::checkMemoryFits(memory.report, options.system); });
  EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
  EXPECT_TRUE(testing::contains(error.what(), "Out of memory on IPU 0"));
  // simulate() checks, as compiling does.
  EXPECT_EQ(testing::captureError([&] { runtime::simulate(*graph, options); }).kind(),
            ErrorKind::OutOfMemory);
}

} // namespace
} // namespace popsim
