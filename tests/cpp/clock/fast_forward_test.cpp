// The clock's fast-forward against its full replay: for pipelines in every
// kind of steady state (training and inference, each schedule, prefetch
// depths, output modes, overlapped inputs and off-chip state through IO
// tiles, synthetic data), copying runs of repeated pipeline cycles gives
// exactly the call that replaying each cycle gives (cycles, compute of the
// first step, every timeline event), while replaying only a few cycles.

#include "clock/call_setup.h"
#include "compiler/compile_program.h"
#include "costs/cost_table.h"
#include "memory/program_memory.h"
#include "runtime/compile_options.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace popsim {
namespace {

using compiler::OutputMode;
using compiler::ProgramKind;
using compiler::ScheduleKind;
using ir::Value;
using testing::f32;
using testing::inBlock;

// x[4,16] -> (linear -> relu) per block S0..S3 -> a mean loss in S3.
std::unique_ptr<ir::Graph> fourBlocks(ir::HostOverlap overlap) {
  auto graph = std::make_unique<ir::Graph>();
  Value* x = graph->addInput("x", f32({4, 16}));
  graph->setInputOverlap(0, overlap);
  for (int block = 0; block < 4; ++block) {
    const std::string name = "S" + std::to_string(block);
    graph->addBlock({name, -1, {}});
    Value* w = graph->addWeight("w" + std::to_string(block), f32({16, 16}), true);
    x = inBlock(graph->apply(ir::OpKind::Relu,
                             {inBlock(graph->apply(ir::OpKind::Linear, {x, w}), name.c_str())}),
                name.c_str());
  }
  Value* loss = inBlock(graph->apply(ir::OpKind::ReduceMean, {x},
                                     {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}),
                        "S3");
  graph->addOutput(loss);
  graph->setLoss(loss);
  return graph;
}

struct Job {
  std::string name;
  runtime::CompileOptions options;
  ir::HostOverlap overlap = ir::HostOverlap::None;
};

runtime::CompileOptions fourIpus(ProgramKind kind, int64_t iterations, int64_t accumulation) {
  runtime::CompileOptions options;
  options.system.numIpus = 4;
  options.compiler.program = kind;
  options.compiler.stages = {{"S0", 0, 0}, {"S1", 1, 1}, {"S2", 2, 2}, {"S3", 3, 3}};
  options.compiler.deviceIterations = iterations;
  options.compiler.gradientAccumulation = accumulation;
  if (kind == ProgramKind::Training) {
    options.compiler.training.groups.push_back({{"w0", "w1", "w2", "w3"}});
  }
  return options;
}

std::vector<Job> jobs() {
  std::vector<Job> all;
  for (int64_t depth : {0, 1, 3}) {
    Job job{"training, prefetch depth " + std::to_string(depth),
            fourIpus(ProgramKind::Training, 2, 64)};
    job.options.memory.prefetchDepth = depth;
    all.push_back(job);
  }
  for (auto [mode, period] : {std::pair{OutputMode::All, 1}, std::pair{OutputMode::Final, 1},
                              std::pair{OutputMode::EveryN, 4}, std::pair{OutputMode::Sum, 1}}) {
    Job job{std::string("inference, output mode ") + compiler::outputModeName(mode),
            fourIpus(ProgramKind::Inference, 96, 1)};
    job.options.compiler.output = {mode, period};
    all.push_back(job);
  }
  for (ScheduleKind schedule : {ScheduleKind::Grouped, ScheduleKind::Sequential}) {
    Job job{std::string("training, schedule ") + compiler::scheduleName(schedule),
            fourIpus(ProgramKind::Training, 1, 48)};
    job.options.compiler.schedule = schedule;
    all.push_back(job);
  }
  for (ir::HostOverlap overlap :
       {ir::HostOverlap::AccumulationLoop, ir::HostOverlap::DeviceIterationLoop}) {
    Job job{std::string("overlapped inputs, ") + ir::hostOverlapName(overlap),
            fourIpus(ProgramKind::Training, 2, 40), overlap};
    job.options.system.ioTiles = 32;
    job.options.compiler.schedule = ScheduleKind::Sequential;
    all.push_back(job);
  }
  {
    Job job{"optimizer state off chip through IO tiles", fourIpus(ProgramKind::Training, 3, 32)};
    job.options.system.ioTiles = 32;
    job.options.memory.optimizerState = {false, 0, true, true};
    job.options.memory.weights = {false, 0, false, false};
    job.options.compiler.training.optimizer = compiler::OptimizerKind::Adam;
    all.push_back(job);
  }
  {
    Job job{"synthetic data", fourIpus(ProgramKind::Training, 2, 64)};
    job.options.clock.syntheticData = true;
    all.push_back(job);
  }
  return all;
}

clock::SimulatedCall replay(const Job& job, bool fastForward) {
  const auto graph = fourBlocks(job.overlap);
  const compiler::Program program =
      compiler::compileProgram(*graph, job.options.compiler, job.options.system);
  const memory::ProgramMemory memory =
      memory::planProgramMemory(program, job.options.memory, job.options.system);
  const costs::CostTable costs = costs::buildCostTable(program, memory, job.options.system);
  clock::ClockSetup setup = clock::callSetup(program, memory, costs, job.options.clock);
  setup.fastForward = fastForward;
  return clock::simulateCall(setup);
}

auto fieldsOf(const clock::TimelineEvent& event) {
  return std::tie(event.ipu, event.task, event.kind, event.step, event.microBatch, event.cycle,
                  event.part, event.start, event.end, event.fromIpus, event.ioTiles);
}

// The pipeline cycles' spans follow one another, each holds its events and
// ends with the sync; the call ends with (or after) the last.
TEST(FastForwardTest, CycleSpansTileTheCall) {
  for (const Job& job : jobs()) {
    SCOPED_TRACE(job.name);
    const clock::SimulatedCall call = replay(job, true);
    ASSERT_FALSE(call.cycleSpans.empty());
    EXPECT_EQ(call.cycleSpans.front().start, 0u);
    for (size_t i = 0; i < call.cycleSpans.size(); ++i) {
      const clock::CycleSpan& span = call.cycleSpans[i];
      EXPECT_LT(span.start, span.end);
      if (i > 0) {
        EXPECT_GE(span.start, call.cycleSpans[i - 1].end);
      }
    }
    EXPECT_LE(call.cycleSpans.back().end, call.cycles);
    for (const clock::TimelineEvent& event : call.timeline) {
      if (event.part != clock::EventPart::Compute) continue;
      const clock::CycleSpan& span = call.cycleSpans[static_cast<size_t>(event.cycle)];
      EXPECT_GE(event.start, span.start);
      EXPECT_LE(event.end, span.end);
    }
  }
}

TEST(FastForwardTest, CopyingRepeatedCyclesGivesTheFullReplay) {
  for (const Job& job : jobs()) {
    SCOPED_TRACE(job.name);
    const clock::SimulatedCall full = replay(job, false);
    const clock::SimulatedCall fast = replay(job, true);
    EXPECT_EQ(fast.cycles, full.cycles);
    EXPECT_EQ(fast.computeCyclesOfFirstStep, full.computeCyclesOfFirstStep);
    EXPECT_EQ(fast.cycleSpans, full.cycleSpans);
    ASSERT_EQ(fast.timeline.size(), full.timeline.size());
    for (size_t i = 0; i < full.timeline.size(); ++i) {
      ASSERT_TRUE(fieldsOf(fast.timeline[i]) == fieldsOf(full.timeline[i]))
          << "event " << i << ": " << fast.timeline[i].task << " micro-batch "
          << fast.timeline[i].microBatch << " at " << fast.timeline[i].start << " against "
          << full.timeline[i].task << " micro-batch " << full.timeline[i].microBatch << " at "
          << full.timeline[i].start;
    }
    // Each pipeline cycle once in the full replay; a few of them with fast-forward.
    EXPECT_GT(full.replayedCycles, fast.replayedCycles);
  }
}

TEST(FastForwardTest, AThousandMicroBatchesCostAFewDozenCycles) {
  Job job{"training", fourIpus(ProgramKind::Training, 1, 1000)};
  const clock::SimulatedCall fast = replay(job, true);
  const clock::SimulatedCall full = replay(job, false);
  EXPECT_EQ(fast.cycles, full.cycles);
  EXPECT_GE(full.replayedCycles, 1000);
  // Ramp-up, the cycles until the host link's backlog settles (its 50,000
  // cycles per input outlast every stage here), ramp-down and the update.
  EXPECT_LE(fast.replayedCycles, 40);
}

} // namespace
} // namespace popsim
