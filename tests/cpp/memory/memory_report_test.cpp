// The per-IPU memory report built from a memory plan, and the out-of-memory
// error users get when a program does not fit.

#include "common/error.h"
#include "common/strings.h"
#include "costs/cost_model.h"
#include "ir/graph.h"
#include "memory/memory_plan.h"
#include "memory/memory_report.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using device::IpuSystemConfig;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using memory::IpuMemoryReport;
using memory::MemoryRegion;
using testing::f32;

constexpr uint64_t kTiles = 1472;

// x[4,256] -> linear(fc1) -> relu -> add(bn.running_mean) -> relu -> linear(fc2) -> softmax,
// plus a reshape (a view) of the second relu as a second output.
std::unique_ptr<Graph> buildMlp() {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({4, 256}));
  Value* w1 = graph->addWeight("fc1.weight", f32({512, 256}), true); // 524,288 B
  Value* b1 = graph->addWeight("fc1.bias", f32({512}), true);        // 2,048 B
  Value* mean = graph->addWeight("bn.running_mean", f32({512}), false);
  Value* w2 = graph->addWeight("fc2.weight", f32({10, 512}), true); // 20,480 B
  Value* h = graph->apply(OpKind::Linear, {x, w1, b1}, {}, {"model.py", 3, "forward", "", ""});
  Value* r = graph->apply(OpKind::Relu, {h});
  Value* r2 = graph->apply(OpKind::Relu, {graph->apply(OpKind::Add, {r, mean})});
  Value* logits = graph->apply(OpKind::Linear, {r2, w2});
  graph->addOutput(graph->apply(OpKind::Softmax, {logits}, {{"dim", int64_t{1}}}));
  graph->addOutput(graph->apply(OpKind::Reshape, {r2}, {{"shape", std::vector<int64_t>{2048}}}));
  return graph;
}

uint64_t categoryBytes(const IpuMemoryReport& report, const std::string& name) {
  for (const memory::MemoryCategory& category : report.categories) {
    if (category.name == name) {
      return category.bytes;
    }
  }
  ADD_FAILURE() << "no category " << name;
  return 0;
}

TEST(MemoryReportTest, CategoriesSumToTheTotal) {
  const std::unique_ptr<Graph> graph = buildMlp();
  const memory::MemoryPlan plan = memory::planMemory(*graph);
  const IpuSystemConfig system;
  const memory::MemoryReport report = memory::buildMemoryReport(*graph, plan, system);

  EXPECT_EQ(report.chip, "Mk2 (GC200)");
  ASSERT_EQ(report.ipus.size(), 1u);
  const IpuMemoryReport& ipu = report.ipus[0];
  EXPECT_EQ(ipu.ipu, 0);
  EXPECT_EQ(ipu.capacity, 1472u * 638976u);

  std::vector<std::string> names;
  uint64_t sum = 0;
  for (const memory::MemoryCategory& category : ipu.categories) {
    names.push_back(category.name);
    sum += category.bytes;
    const bool whileInUse = category.name == "activations" || category.name == "stash" ||
                            category.name == "temporaries" || category.name == "streamed in";
    EXPECT_EQ(category.alwaysLive, !whileInUse) << category.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"weights", "gradient accumulators", "optimizer state",
                                             "random state", "constants", "input streams",
                                             "prefetch buffers", "code", "activations", "stash",
                                             "temporaries", "streamed in"}));
  EXPECT_EQ(ipu.total(), sum);
  EXPECT_EQ(ipu.alwaysLive() + ipu.notAlwaysLive(), ipu.total());
  EXPECT_EQ(ipu.notAlwaysLive(), categoryBytes(ipu, "activations"));

  EXPECT_EQ(categoryBytes(ipu, "weights"), 524288u + 2048u + 2048u + 20480u);
  EXPECT_EQ(categoryBytes(ipu, "constants"), 0u);
  EXPECT_EQ(categoryBytes(ipu, "input streams"), 4096u);
  EXPECT_EQ(categoryBytes(ipu, "prefetch buffers"), 0u); // a runtime buffer: none given
  EXPECT_EQ(categoryBytes(ipu, "activations"),
            plan.ipus()[0].regionBytes[static_cast<size_t>(MemoryRegion::Activations)]);
  // Five distinct signatures (the two relus share one) and six non-view ops.
  EXPECT_EQ(categoryBytes(ipu, "code"), 5 * memory::kVertexCodeBytesPerTile * kTiles +
                                            6 * memory::kControlCodeBytesPerTile * kTiles);
  EXPECT_TRUE(ipu.fits());
  EXPECT_NO_THROW(memory::checkMemoryFits(report, system));
}

TEST(MemoryReportTest, OffChipTensorsMoveToStreamingMemory) {
  const std::unique_ptr<Graph> graph = buildMlp();
  const memory::MemoryPlan plan = memory::planMemory(*graph);
  const IpuSystemConfig system;
  const Value* w1 = graph->findWeight("fc1.weight");
  const Value* b1 = graph->findWeight("fc1.bias");
  const IpuMemoryReport onChip = memory::buildMemoryReport(*graph, plan, system).ipus.at(0);
  memory::RuntimeBuffers buffers;
  buffers.offChip = {w1, b1};
  const IpuMemoryReport offChip =
      memory::buildMemoryReport(*graph, plan, system, buffers).ipus.at(0);

  ASSERT_EQ(offChip.streamingMemory.size(), 1u);
  EXPECT_EQ(offChip.streamingMemory[0].name, "weights");
  EXPECT_EQ(offChip.streamingMemory[0].bytes, 524288u + 2048u);
  EXPECT_EQ(offChip.offChip(), 524288u + 2048u);
  EXPECT_EQ(onChip.offChip(), 0u);
  EXPECT_EQ(categoryBytes(offChip, "weights"), 2048u + 20480u);
  EXPECT_EQ(onChip.total() - offChip.total(), 524288u + 2048u);
  EXPECT_NE(offChip.largestTensors.at(0).description, "fc1.weight (weight)");
}

TEST(MemoryReportTest, RuntimeBuffersHaveCategoriesOfTheirOwn) {
  const std::unique_ptr<Graph> graph = buildMlp();
  const memory::MemoryPlan plan = memory::planMemory(*graph);
  const IpuSystemConfig system;
  memory::RuntimeBuffers buffers;
  buffers.stash = {1000};
  buffers.stashOffChip = {3000};
  buffers.prefetch = {200};
  buffers.temporaries = {4000};
  buffers.streamedIn = {500};
  const IpuMemoryReport plain = memory::buildMemoryReport(*graph, plan, system).ipus.at(0);
  const IpuMemoryReport ipu = memory::buildMemoryReport(*graph, plan, system, buffers).ipus.at(0);

  EXPECT_EQ(categoryBytes(ipu, "stash"), 1000u);
  EXPECT_EQ(categoryBytes(ipu, "prefetch buffers"), 200u);
  EXPECT_EQ(categoryBytes(ipu, "temporaries"), 4000u);
  EXPECT_EQ(categoryBytes(ipu, "streamed in"), 500u);
  EXPECT_EQ(ipu.alwaysLive() - plain.alwaysLive(), 200u);
  EXPECT_EQ(ipu.notAlwaysLive() - plain.notAlwaysLive(), 1000u + 4000u + 500u);
  ASSERT_EQ(ipu.streamingMemory.size(), 1u);
  EXPECT_EQ(ipu.streamingMemory[0].name, "stash");
  EXPECT_EQ(ipu.offChip(), 3000u);
}

TEST(MemoryReportTest, LargestTensorsAreSortedAndNamed) {
  const std::unique_ptr<Graph> graph = buildMlp();
  const memory::MemoryPlan plan = memory::planMemory(*graph);
  const memory::MemoryReport report = memory::buildMemoryReport(*graph, plan, {});
  const std::vector<memory::TensorMemory>& tensors = report.ipus.at(0).largestTensors;

  ASSERT_EQ(tensors.size(), memory::kLargestTensors);
  for (size_t i = 1; i < tensors.size(); ++i) {
    EXPECT_GE(tensors[i - 1].bytes, tensors[i].bytes) << i;
  }
  EXPECT_EQ(tensors[0].description, "fc1.weight (weight)");
  EXPECT_EQ(tensors[0].type, "f32[512,256]");
  EXPECT_EQ(tensors[0].category, "weights");
  EXPECT_EQ(tensors[0].bytes, 524288u);
  EXPECT_EQ(tensors[1].description, "fc2.weight (weight)");
  EXPECT_EQ(tensors[1].bytes, 20480u);
  // Equal sizes keep schedule order.
  EXPECT_EQ(tensors[2].description, "output of linear at model.py:3");
  EXPECT_EQ(tensors[2].type, "f32[4,512]");
  EXPECT_EQ(tensors[2].category, "activations");
  EXPECT_EQ(tensors[3].description, "output of relu");
  EXPECT_EQ(tensors[3].bytes, 8192u);
  EXPECT_EQ(tensors[4].bytes, 8192u);
}

TEST(MemoryReportTest, DescribeValue) {
  const std::unique_ptr<Graph> graph = buildMlp();
  EXPECT_EQ(memory::describeValue(*graph->findWeight("fc1.bias")), "fc1.bias (weight)");
  EXPECT_EQ(memory::describeValue(*graph->findWeight("bn.running_mean")),
            "bn.running_mean (buffer)");
  EXPECT_EQ(memory::describeValue(*graph->inputs()[0]), "input 'x'");
  EXPECT_EQ(memory::describeValue(*graph->addScalarConstant(1.0f)), "a constant");
  EXPECT_EQ(memory::describeValue(*graph->nodes()[0]->output()), "output of linear at model.py:3");
  EXPECT_EQ(memory::describeValue(*graph->outputs()[0]), "output of softmax");
}

TEST(MemoryReportTest, OutOfMemoryNamesTheIpuBytesAndLargestTensor) {
  const std::unique_ptr<Graph> graph = buildMlp();
  const memory::MemoryPlan plan = memory::planMemory(*graph);
  IpuSystemConfig system;
  system.memoryPerIpu = 1000000;
  const memory::MemoryReport report = memory::buildMemoryReport(*graph, plan, system);
  const IpuMemoryReport& ipu = report.ipus.at(0);
  EXPECT_EQ(ipu.capacity, 1000000u);
  EXPECT_FALSE(ipu.fits());

  const CoreError error = testing::captureError([&] { memory::checkMemoryFits(report, system); });
  EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
  const std::string message = error.what();
  EXPECT_TRUE(testing::contains(message, "Out of memory on IPU 0: the program needs " +
                                             formatBytes(ipu.total()) + " but IPU 0 has " +
                                             "1,000,000 bytes (976.56 KiB) (set by "
                                             "Options.Simulator.memoryPerIpu)."));
  EXPECT_TRUE(testing::contains(message, "fc1.weight (weight) f32[512,256]: 524,288 bytes "
                                         "(512.00 KiB) (weights)"));
  EXPECT_TRUE(testing::contains(message, "weights: 548,864 bytes (536.00 KiB) (always live)"));
  EXPECT_TRUE(testing::contains(message, "activations: " + formatBytes(ipu.notAlwaysLive()) +
                                             " (peak, not always live)"));
  // Empty categories are left out.
  EXPECT_FALSE(testing::contains(message, "constants:"));
}

TEST(MemoryReportTest, OutOfMemoryOnTheSecondIpu) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4, 256}));
  Value* w = graph.addWeight("big.weight", f32({512, 256}), true);
  Value* r = graph.apply(OpKind::Relu, {x});
  ir::Node* linear = graph.addNode(OpKind::Linear, {r, w});
  linear->setPlacement({"stage1", 1, 1});
  graph.addOutput(linear->output());
  IpuSystemConfig system;
  system.numIpus = 2;
  memory::MemoryPlanOptions options;
  options.numIpus = 2;
  const memory::MemoryPlan plan = memory::planMemory(graph, options);

  const memory::MemoryReport fitting = memory::buildMemoryReport(graph, plan, system);
  ASSERT_EQ(fitting.ipus.size(), 2u);
  EXPECT_EQ(categoryBytes(fitting.ipus[0], "weights"), 0u);
  EXPECT_EQ(categoryBytes(fitting.ipus[1], "weights"), 524288u);
  EXPECT_EQ(categoryBytes(fitting.ipus[0], "code"),
            (memory::kVertexCodeBytesPerTile + memory::kControlCodeBytesPerTile) * kTiles);
  EXPECT_NO_THROW(memory::checkMemoryFits(fitting, system));

  // IPU 0 needs about 430 kB, IPU 1 about 960 kB.
  system.memoryPerIpu = 700000;
  const memory::MemoryReport report = memory::buildMemoryReport(graph, plan, system);
  EXPECT_TRUE(report.ipus[0].fits());
  EXPECT_FALSE(report.ipus[1].fits());
  const CoreError error = testing::captureError([&] { memory::checkMemoryFits(report, system); });
  EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
  EXPECT_TRUE(testing::contains(error.what(), "Out of memory on IPU 1: the program needs " +
                                                  formatBytes(report.ipus[1].total()) +
                                                  " but IPU 1 has 700,000 bytes"));
  EXPECT_TRUE(
      testing::contains(error.what(), "Largest tensors on IPU 1:\n    big.weight (weight)"));
}

} // namespace
} // namespace popsim
