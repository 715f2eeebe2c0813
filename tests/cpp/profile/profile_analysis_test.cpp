// The profile's analysis and advice on hand-made traces, whose figures are
// worked out by hand in the comments.
#include "profile/profile_analysis.h"
#include "profile/text_format.h"

#include <gtest/gtest.h>

namespace popsim::profile {
namespace {

TraceEvent event(int64_t ipu, const std::string& task, const std::string& kind, int64_t microBatch,
                 uint64_t start, uint64_t end) {
  TraceEvent e;
  e.ipu = ipu;
  e.task = task;
  e.kind = kind;
  e.microBatch = microBatch;
  e.cycle = microBatch;
  e.start = start;
  e.end = end;
  return e;
}

// `inputsPreparedAhead`: 0 without multibuffering (depth 1), else depth - 1.
CallTrace trace(std::vector<TraceEvent> events, uint64_t cycles, int64_t inputsPreparedAhead) {
  CallTrace result;
  result.events = std::move(events);
  result.totalCycles = cycles;
  result.clockHz = 1e6;
  result.pipeline.ipus = 2;
  result.pipeline.stages = 2;
  result.pipeline.schedule = "Interleaved";
  result.pipeline.prefetchDepth = inputsPreparedAhead + 1;
  result.pipeline.inputsPreparedAhead = inputsPreparedAhead;
  return result;
}

const std::vector<StageBlocks> kTwoStages = {{0, 0, {"A"}}, {1, 1, {"B"}}};

// Two micro-batches over two stages, without prefetching: IPU 0 streams its
// inputs (10 cycles each) and computes 20; IPU 1 receives a copy of 5,
// computes 5, and streams the last output to the host in 30.
CallTrace twoMicroBatches() {
  return trace({event(0, "F0", "host_input", 0, 0, 10), event(0, "F0", "forward", 0, 10, 30),
                event(0, "F0", "host_input", 1, 30, 40), event(0, "F0", "forward", 1, 40, 60),
                event(1, "F1", "copy", 0, 30, 35), event(1, "F1", "forward", 0, 35, 40),
                event(1, "F1", "copy", 1, 60, 65), event(1, "F1", "forward", 1, 65, 70),
                event(1, "F1", "host_output", 1, 70, 100)},
               100, 0);
}

// The advice line that starts with `start`, or "" when there is none.
std::string tipStartingWith(const std::vector<std::string>& tips, const std::string& start) {
  for (const std::string& tip : tips)
    if (tip.rfind(start, 0) == 0) return tip;
  return "";
}

TEST(ProfileAnalysis, UnderSyncPatternFullTheAdviceNamesSinglePipeline) {
  // IPU 0 receives each micro-batch's inputs on its compute tiles (100
  // cycles) and computes 20; IPU 1 computes 100. Under Full a cycle lasts
  // 100 + 100 = 200; with SinglePipeline max(120, 100) = 120, 40% shorter.
  CallTrace call =
      trace({event(0, "F0", "stream_copy", 0, 0, 100), event(0, "F0", "forward", 0, 100, 120),
             event(0, "F0", "stream_copy", 1, 200, 300), event(0, "F0", "forward", 1, 300, 320),
             event(1, "F1", "forward", 0, 200, 300), event(1, "F1", "forward", 1, 400, 500)},
            500, 0);
  const std::string start = "Under SyncPattern.Full (PopTorch's default) every IPU waits out";
  call.pipeline.hostExchangesStallEveryIpu = true;
  const Analysis full = analyse(&call, kTwoStages, nullptr);
  EXPECT_EQ(tipStartingWith(advice(full, true), start),
            "Under SyncPattern.Full (PopTorch's default) every IPU waits out each host exchange: "
            "IPU 0's take 100 cycles per micro-batch. "
            "opts.syncPattern(popsim.SyncPattern.SinglePipeline) lets the other IPUs compute "
            "meanwhile: pipeline cycles up to 40% shorter.");
  // Not under SinglePipeline, nor in sharded execution, where stages take turns.
  EXPECT_EQ(tipStartingWith(advice(full, false), start), "");
  call.pipeline.hostExchangesStallEveryIpu = false;
  EXPECT_EQ(tipStartingWith(advice(analyse(&call, kTwoStages, nullptr), true), start), "");
}

TEST(ProfileAnalysis, ReadsLoadsAndAdviceOffAHandMadeTrace) {
  const CallTrace call = twoMicroBatches();
  const Json memory = Json::parse(R"({"ipus": [
      {"ipu": 0, "total": 300, "limit": 1000, "always_live": {"categories": {"code": 200}},
       "not_always_live": {"categories": {"activations": 100}}},
      {"ipu": 1, "total": 700, "limit": 1000, "always_live": {"categories": {"code": 600}},
       "not_always_live": {"categories": {"activations": 100}}}]})");
  const Analysis analysis = analyse(&call, kTwoStages, &memory);
  ASSERT_EQ(analysis.ipus.size(), 2u);
  EXPECT_DOUBLE_EQ(analysis.ipus[0].busyFraction, 0.6);    // 60 of 100 cycles
  EXPECT_DOUBLE_EQ(analysis.ipus[0].computeFraction, 0.4); // 40 of them forward
  EXPECT_DOUBLE_EQ(analysis.ipus[1].busyFraction, 0.5);
  EXPECT_DOUBLE_EQ(analysis.ipus[1].computeFraction, 0.1);
  EXPECT_NEAR(analysis.idleFraction(), 0.45, 1e-12);
  // Medians over the two micro-batches: stage 1 takes 10 and 40 cycles (its
  // output transfer), so 25.
  ASSERT_EQ(analysis.stages.size(), 2u);
  EXPECT_EQ(analysis.stages[0].cycles, 30);
  EXPECT_EQ(analysis.stages[0].computeCycles, 20);
  EXPECT_EQ(analysis.stages[0].hostCycles, 10);
  EXPECT_EQ(analysis.stages[0].copyCycles, 0);
  EXPECT_EQ(analysis.stages[1].cycles, 25);
  EXPECT_EQ(analysis.stages[1].computeCycles, 5);
  EXPECT_EQ(analysis.stages[1].hostCycles, 15);
  EXPECT_EQ(analysis.stages[1].copyCycles, 5);
  EXPECT_EQ(analysis.stages[1].outputCycles, 15);
  const std::vector<std::string> tips = advice(analysis, true);
  ASSERT_GE(tips.size(), 3u);
  EXPECT_EQ(tips[0].rfind("Bottleneck: stage 0 (blocks A) on IPU 0 takes 30 cycles per "
                          "micro-batch, 1.2x the fastest (stage 1 (blocks B) on IPU 1, 25)",
                          0),
            0u)
      << tips[0];
  EXPECT_TRUE(std::any_of(tips.begin(), tips.end(), [](const std::string& tip) {
    return tip.rfind("The IPUs wait 45% of the call", 0) == 0;
  }));
  EXPECT_EQ(tips.back().rfind("IPU 1 is closest to its memory limit", 0), 0u) << tips.back();
  EXPECT_NE(tips.back().find("mostly code"), std::string::npos) << tips.back();
  const std::string sharded = advice(analysis, false).front();
  EXPECT_EQ(sharded.rfind("Slowest stage: stage 0 (blocks A) on IPU 0 takes 30 cycles per "
                          "micro-batch, 55% of the stages' time. Sharded execution runs the "
                          "stages one after another",
                          0),
            0u)
      << sharded;
}

TEST(ProfileAnalysis, HostBoundReplicasSharingAHostThreadAreToldToUseMoreProcesses) {
  // Stage 0 spends 10 of its 30 cycles on host transfers, over the 30% that
  // earns advice. With 3 replicas on each of the process's host threads, one
  // more line says how to give them threads of their own.
  CallTrace call = twoMicroBatches();
  const std::string start = "Host transfers wait for a host thread";
  const std::vector<std::string> alone = advice(analyse(&call, kTwoStages, nullptr), true);
  ASSERT_FALSE(tipStartingWith(alone, "33% of stage 0's time is host transfers").empty());
  EXPECT_TRUE(tipStartingWith(alone, start).empty());
  call.pipeline.replicasPerHostThread = 3;
  const std::vector<std::string> tips = advice(analyse(&call, kTwoStages, nullptr), true);
  EXPECT_EQ(tips.size(), alone.size() + 1);
  EXPECT_EQ(tipStartingWith(tips, start),
            "Host transfers wait for a host thread: each of this process's threads streams the "
            "data of 3 replicas in turn. To stream them in parallel, run the replicas in more "
            "processes (Options.Distributed, one torchrun or PopRun process each) or give the "
            "stream callbacks more threads (engine options streamCallbacks.multiThreadMode and "
            "streamCallbacks.numWorkerThreads).");
}

TEST(ProfileAnalysis, APrefetchingHostLinkSlowerThanEveryStageIsTheBottleneck) {
  // Inputs of 40 cycles prefetched beside stages of 10 and 15: the link sets
  // the pace, and its transfers are not part of stage 0's load.
  const CallTrace call =
      trace({event(0, "F0", "host_input", 0, 0, 40), event(0, "F0", "forward", 0, 40, 50),
             event(0, "F0", "host_input", 1, 40, 80), event(0, "F0", "forward", 1, 80, 90),
             event(1, "F1", "forward", 0, 50, 65), event(1, "F1", "forward", 1, 90, 105)},
            105, 1);
  const Analysis analysis = analyse(&call, kTwoStages, nullptr);
  ASSERT_EQ(analysis.stages.size(), 2u);
  EXPECT_EQ(analysis.stages[0].cycles, 10);
  EXPECT_EQ(analysis.stages[0].hostCycles, 0);
  EXPECT_EQ(analysis.stages[1].cycles, 15);
  EXPECT_TRUE(analysis.linkBound());
  const std::vector<std::string> tips = advice(analysis, true);
  ASSERT_GE(tips.size(), 2u);
  EXPECT_EQ(tips[0].rfind("Bottleneck: IPU 0's host link takes 40 cycles to stream a "
                          "micro-batch's inputs in, more than any stage's (15)",
                          0),
            0u)
      << tips[0];
  EXPECT_EQ(tips[1].rfind("Slowest stage: stage 1 (blocks B) on IPU 1, 15 cycles per "
                          "micro-batch, 1.5x the fastest; it sets the pace only once the host "
                          "link is faster.",
                          0),
            0u)
      << tips[1];
}

TEST(ProfileAnalysis, NamesTheStageOfATask) {
  EXPECT_EQ(stageOfTask("F2"), 2);
  EXPECT_EQ(stageOfTask("B0"), 0);
  EXPECT_EQ(stageOfTask("FB13"), 13);
  EXPECT_FALSE(stageOfTask("U1"));
  EXPECT_FALSE(stageOfTask("FB"));
  EXPECT_FALSE(stageOfTask("F1x"));
}

TEST(TextFormat, WritesNumbersAsPythonsFormatSpecsDo) {
  EXPECT_EQ(grouped(1234567), "1,234,567");
  EXPECT_EQ(grouped(-1234), "-1,234");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(groupedFixed(1234.5, 0), "1,234"); // half to even, as Python's format
  EXPECT_EQ(groupedFixed(1235.5, 0), "1,236");
  EXPECT_EQ(percent(0.125, 0), "12%");
  EXPECT_EQ(percent(0.4567, 1), "45.7%");
  EXPECT_EQ(general(0.25, 6), "0.25");
  EXPECT_EQ(general(1.33, 3), "1.33");
  EXPECT_EQ(mib(3.5 * 1024 * 1024 * 1024), "3,584.00 MiB");
  EXPECT_EQ(table({"IPU", "busy"}, {{"0", "60.0%"}, {"10", "5.0%"}}),
            (std::vector<std::string>{"IPU   busy", "0    60.0%", "10    5.0%"}));
}

} // namespace
} // namespace popsim::profile
