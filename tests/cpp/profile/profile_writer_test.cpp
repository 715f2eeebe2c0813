// Profiles of a compiled, pipelined program: the sizing report's time
// breakdown adds up, and the files the writer leaves read back as the call
// that made them.
#include "ir/graph.h"
#include "profile/chrome_trace.h"
#include "profile/profile_writer.h"
#include "profile/sizing_report.h"
#include "runtime/executable.h"
#include "runtime/two_blocks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace popsim::profile {
namespace {

namespace fs = std::filesystem;
using popsim::testing::twoBlocks;

// Pipelined over two IPUs, four micro-batches per call, cost-only.
std::unique_ptr<runtime::Executable> calledPipeline(const ir::Graph& graph) {
  runtime::CompileOptions options;
  options.system.numIpus = 2;
  options.compiler.stages = {{"A", 0, 0}, {"B", 1, 1}};
  options.compiler.deviceIterations = 4;
  options.kernels.costOnly = true;
  auto executable = runtime::Executable::compile(graph, options);
  executable->run({{nullptr, ir::DType::Float32, {32, 16}}}, {});
  return executable;
}

const std::vector<StageBlocks> kStages = {{0, 0, {"A"}}, {1, 1, {"B"}}};

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SizingReport, EachIpusTimePartsAddUpToTheCall) {
  const auto graph = twoBlocks();
  const auto executable = calledPipeline(*graph);
  const SizingReport report = sizingReport(*executable, {"TwoBlocks", 1, 1, 4, 1, 32}, kStages);
  ASSERT_EQ(report.ipus.size(), 2u);
  EXPECT_EQ(report.callCycles, executable->lastRunCycles());
  EXPECT_TRUE(report.costOnly);
  for (const IpuSizing& ipu : report.ipus) {
    uint64_t total = 0;
    for (uint64_t cycles : ipu.timeCycles)
      total += cycles;
    EXPECT_EQ(total, report.callCycles) << "IPU " << ipu.ipu;
    EXPECT_GT(ipu.timeCycles[static_cast<size_t>(TimePart::Compute)], 0u);
    // Two stages over four micro-batches: the pipeline fills and drains.
    EXPECT_GT(ipu.timeCycles[static_cast<size_t>(TimePart::PipelineFillAndDrain)], 0u);
  }
  EXPECT_DOUBLE_EQ(report.throughput(), 32 / report.callSeconds());
  // The report survives its JSON form, printout included.
  const SizingReport back = sizingReportFromJson(Json::parse(jsonText(toJson(report))));
  EXPECT_EQ(back.text(), report.text());
  EXPECT_EQ(report.overviewLines()[1],
            "Job: 1 replica(s) x 2 IPU(s) = 2 IPUs; a call is 4 steps of 1 micro-batch(es) per "
            "replica, 32 items over all replicas");
}

TEST(ProfileWriter, WritesTextThatIsNotUtf8AsReplacementCharacters) {
  // A source path in another encoding must not fail the profile.
  EXPECT_EQ(jsonText(Json(std::string("model\xff.py"))), "\"model\xEF\xBF\xBD.py\"");
  EXPECT_EQ(jsonText(Json{{"a", 1}}, 1), "{\n \"a\": 1\n}");
}

TEST(ProfileWriter, WritesFilesThatReadBackAsTheCall) {
  const auto graph = twoBlocks();
  const auto executable = calledPipeline(*graph);
  const fs::path root =
      fs::temp_directory_path() / ("popsim_profile_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  ProfileWriter writer(root.string(), "inference", "");
  EXPECT_EQ(fs::path(writer.directory()), root / "inference");
  // A second model of the same kind gets a directory of its own.
  EXPECT_EQ(fs::path(ProfileWriter(root.string(), "inference", "").directory()),
            root / "inference_1");
  writer.afterCompile(*executable, "TwoBlocks", kStages, 0.5, 1);
  const Json memory = Json::parse(read(root / "inference" / kMemoryFile));
  EXPECT_EQ(memory["format"], "popsim-memory");
  EXPECT_EQ(memory["ipus"].size(), 2u);
  EXPECT_FALSE(fs::exists(root / "inference" / kTraceFile)); // no call yet
  EXPECT_NE(read(root / "inference" / kReportFile).find("No call yet"), std::string::npos);

  const SizingJob job{"TwoBlocks", 1, 1, 4, 1, 32};
  writer.afterCall(*executable, 0.25, job);
  const Json document = Json::parse(read(root / "inference" / kTraceFile));
  const CallTrace back = callTraceFromDocument(document);
  const CallTrace call = callTraceOf(*executable);
  ASSERT_EQ(back.events.size(), call.events.size());
  for (size_t i = 0; i < call.events.size(); ++i) {
    EXPECT_EQ(back.events[i].task, call.events[i].task);
    EXPECT_EQ(back.events[i].kind, call.events[i].kind);
    EXPECT_EQ(back.events[i].start, call.events[i].start);
    EXPECT_EQ(back.events[i].end, call.events[i].end);
  }
  EXPECT_EQ(back.totalCycles, call.totalCycles);
  EXPECT_EQ(document["popsim"]["host"]["calls"], 1);
  EXPECT_EQ(document["popsim"]["sizing"]["call_cycles"], call.totalCycles);
  // The writer sizes from the trace and memory.json it has: the same report.
  EXPECT_EQ(document["popsim"]["sizing"], toJson(sizingReport(*executable, job, kStages)));
  EXPECT_EQ(document["popsim"]["stages"][1]["blocks"][0], "B");
  const std::string page = read(root / "inference" / kReportFile);
  for (const char* placeholder : {"__TITLE__", "__CSS__", "__JS__", "__DATA__", "__HOST__"}) {
    EXPECT_EQ(page.find(placeholder), std::string::npos) << placeholder;
  }
  EXPECT_NE(page.find("popsim profile of TwoBlocks (inference)"), std::string::npos);
  EXPECT_NE(page.find(R"({"calls":1,"wall_ms":250.0})"), std::string::npos);
  EXPECT_EQ(page.find("__PLAN__"), std::string::npos);
  fs::remove_all(root);
}

TEST(ProfileWriter, ShowsTheJobPlansSectionAfterTheSummary) {
  const auto graph = twoBlocks();
  const auto executable = calledPipeline(*graph);
  const fs::path root =
      fs::temp_directory_path() / ("popsim_plan_section_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  ProfileWriter writer(root.string(), "training", "");
  const std::string section = R"(<section id="plan-section"><h2>Job plan</h2></section>)";
  writer.setPlanSection(section);
  writer.afterCompile(*executable, "TwoBlocks", kStages, 0.5, 1);
  for (int call = 0; call < 2; ++call) { // the page at compile time, then a call's
    const std::string page = read(root / "training" / kReportFile);
    const size_t summary = page.find(R"(<section id="summary-section">)");
    const size_t plan = page.find(section);
    ASSERT_NE(plan, std::string::npos) << call;
    EXPECT_LT(summary, plan) << call;
    EXPECT_EQ(page.find(section, plan + 1), std::string::npos) << call; // once
    writer.afterCall(*executable, 0.25, std::nullopt);
  }
  fs::remove_all(root);
}

} // namespace
} // namespace popsim::profile
