// The cycle model against hand-computed figures from the public IPU numbers
// (Mk2: 1472 tiles, 16 fp32 MACs per tile-cycle, 1.33 GHz, 7 GB/s host I/O
// with 50,000 cycles of latency).

#include "costs/cost_model.h"
#include "device/chip_spec.h"
#include "device/ipu_system.h"
#include "ir/graph.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cmath>

namespace popsim {
namespace {

using device::ChipVersion;
using ir::Attributes;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;
using testing::f32;

const device::ChipSpec& mk2() { return device::chipSpec(ChipVersion::Mk2); }

// The cost of one node applied to fresh inputs of the given types.
costs::OpCost costOf(OpKind kind, const std::vector<ir::TensorType>& inputs,
                     const Attributes& attrs = {}) {
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(graph.addInput("x" + std::to_string(i), inputs[i]));
  }
  const Node* node = graph.addNode(kind, values, attrs);
  return costs::estimateOpCost(*node, mk2());
}

// MACs / (1472 tiles x 16 MACs x 0.6), rounded up.
uint64_t macCycles(double macs) {
  return static_cast<uint64_t>(std::ceil(macs / (1472 * 16 * 0.6)));
}

// 6 x (58 + 3 x ceil(n / 12)) + 11 with n = ceil(elements / 1472).
uint64_t elementwiseCycles(uint64_t elements) {
  const uint64_t perTile = (elements + 1471) / 1472;
  return 6 * (58 + 3 * ((perTile + 11) / 12)) + 11;
}

TEST(CostModelTest, ChipFigures) {
  EXPECT_EQ(mk2().tiles, 1472);
  EXPECT_EQ(mk2().memoryBytes(), 1472u * 638976u);
  EXPECT_EQ(device::chipSpec(ChipVersion::Mk1).memoryBytes(), 1216u * 262144u);
  ChipVersion version = ChipVersion::Mk1;
  EXPECT_TRUE(device::parseChipVersion("GC200", &version));
  EXPECT_EQ(version, ChipVersion::Mk2);
  EXPECT_TRUE(device::parseChipVersion("bow", &version));
  EXPECT_EQ(version, ChipVersion::Bow);
  EXPECT_TRUE(device::parseChipVersion("Mk1", &version));
  EXPECT_EQ(version, ChipVersion::Mk1);
  EXPECT_FALSE(device::parseChipVersion("mk3", &version));
  EXPECT_EQ(version, ChipVersion::Mk1);
}

TEST(CostModelTest, SyncCycles) {
  EXPECT_EQ(costs::syncCycles(1, mk2()), 40u); // ceil(15 ns x 1.33 GHz x 1 x 2) = ceil(39.9)
  EXPECT_EQ(costs::syncCycles(2, mk2()), 40u);
  EXPECT_EQ(costs::syncCycles(4, mk2()), 80u); // two hops
  EXPECT_EQ(costs::syncCycles(8, mk2()), 120u);
  EXPECT_EQ(costs::syncCycles(1, device::chipSpec(ChipVersion::Mk1)), 48u);
  EXPECT_EQ(costs::syncCycles(1, device::chipSpec(ChipVersion::Bow)), 56u); // ceil(55.5)
}

TEST(CostModelTest, HostTransferCycles) {
  // 50,000 + ceil(bytes x 1.33e9 / 7e9) = 50,000 + ceil(0.19 x bytes).
  EXPECT_EQ(costs::hostTransferCycles(0, mk2()), 50000u);
  EXPECT_EQ(costs::hostTransferCycles(1024, mk2()), 50000u + 195u);       // 194.56
  EXPECT_EQ(costs::hostTransferCycles(1 << 20, mk2()), 50000u + 199230u); // 199229.44
  // Streaming Memory: the links' 3,000 cycles, then 8 GB/s (64 GB/s / 8).
  EXPECT_EQ(costs::streamingMemoryCycles(0, mk2()), 3000u);
  EXPECT_EQ(costs::streamingMemoryCycles(1 << 20, mk2()), 3000u + 174326u); // 174325.76
  for (uint64_t bytes : {1u, 999u, 123457u}) {
    const double exact = static_cast<double>(bytes) * 1.33e9 / 7e9;
    EXPECT_EQ(costs::hostTransferCycles(bytes, mk2()),
              50000u + static_cast<uint64_t>(std::ceil(exact)))
        << bytes;
  }
}

TEST(CostModelTest, LinkTransferCycles) {
  // sync + 3,000 + ceil(1000 x 1.33e9 / 64e9) = sync + 3,000 + ceil(20.78)
  EXPECT_EQ(costs::linkTransferCycles(1000, 2, mk2()), 40u + 3000u + 21u);
  EXPECT_EQ(costs::linkTransferCycles(1000, 4, mk2()), 80u + 3000u + 21u);
}

TEST(CostModelTest, RingAllReduceCycles) {
  // 4 replicas: 2 x 3 steps of a quarter of the bytes, each with the link's
  // 3000-cycle latency; over 16 IPUs the GW-Links (12.5 GB/s) bound the ring.
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 4, 4, mk2()), 6u * (3000u + 21u));
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 4, 32, mk2()), 6u * (3000u + 107u));
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 1, 1, mk2()), 0u);
}

TEST(CostModelTest, LinearFollowsMacThroughput) {
  // [64,512] x [256,512]^T: 64 x 256 x 512 = 8,388,608 MACs -> ceil(593.6) = 594.
  const costs::OpCost cost = costOf(OpKind::Linear, {f32({64, 512}), f32({256, 512})});
  EXPECT_EQ(cost.computeCycles, 594u);
  EXPECT_EQ(cost.computeCycles, macCycles(64.0 * 256 * 512));
  // (64 x 512 + 256 x 512) x 4 bytes over 1472 tiles x 4 bytes: ceil(111.3).
  EXPECT_EQ(cost.exchangeCycles, 112u);
  EXPECT_EQ(cost.syncCycles, 40u);
  EXPECT_EQ(cost.total(), 40u + 112u + 594u);
}

TEST(CostModelTest, MatMulFollowsMacThroughput) {
  // [8,128,256] x [256,64]: 8 x 128 x 64 x 256 = 16,777,216 MACs -> ceil(1187.2).
  const costs::OpCost cost = costOf(OpKind::MatMul, {f32({8, 128, 256}), f32({256, 64})});
  EXPECT_EQ(cost.computeCycles, 1188u);
  EXPECT_EQ(cost.computeCycles, macCycles(8.0 * 128 * 64 * 256));
  EXPECT_EQ(costOf(OpKind::MatMul, {f32({2, 1, 4, 5}), f32({3, 5, 6})}).computeCycles,
            macCycles(2.0 * 3 * 4 * 6 * 5));
}

TEST(CostModelTest, Conv2dFollowsMacThroughput) {
  const Attributes conv = {{"stride", std::vector<int64_t>{1, 1}},
                           {"padding", std::vector<int64_t>{1, 1}},
                           {"dilation", std::vector<int64_t>{1, 1}},
                           {"groups", int64_t{1}}};
  // Output [1,32,32,32] x 16 input channels x 3 x 3 = 4,718,592 MACs -> ceil(333.9).
  const costs::OpCost cost =
      costOf(OpKind::Convolution, {f32({1, 16, 32, 32}), f32({32, 16, 3, 3}), f32({32})}, conv);
  EXPECT_EQ(cost.computeCycles, 334u);
  EXPECT_EQ(cost.computeCycles, macCycles(32.0 * 32 * 32 * 16 * 9));
  // (65,536 + 18,432 + 128) bytes / 5,888 bytes per cycle: ceil(14.3).
  EXPECT_EQ(cost.exchangeCycles, 15u);
  EXPECT_EQ(cost.syncCycles, 40u);

  // Grouped: each output element reads only C / groups = 2 channels.
  Attributes grouped = conv;
  grouped.set("groups", int64_t{4}).set("padding", std::vector<int64_t>{0, 0});
  const uint64_t bigGroupedMacs = 64 * 62 * 62 * 16 * 9;
  EXPECT_EQ(costOf(OpKind::Convolution, {f32({1, 64, 64, 64}), f32({64, 16, 3, 3})}, grouped)
                .computeCycles,
            macCycles(static_cast<double>(bigGroupedMacs)));
}

// The backward pass does the forward's MACs again per gradient: each
// gradient of a convolution pairs every output-gradient element with every
// tap, and a linear layer's weight gradient sums over all rows.
TEST(CostModelTest, GradientsFollowMacThroughput) {
  Attributes conv = {{"stride", std::vector<int64_t>{1, 1}},
                     {"padding", std::vector<int64_t>{1, 1}},
                     {"dilation", std::vector<int64_t>{1, 1}},
                     {"groups", int64_t{2}}};
  const uint64_t macs = macCycles(32.0 * 32 * 32 * 8 * 9); // output x C / groups x taps
  Attributes gradInput = conv;
  gradInput.set("input_shape", std::vector<int64_t>{1, 16, 32, 32});
  EXPECT_EQ(
      costOf(OpKind::ConvolutionGradInput, {f32({1, 32, 32, 32}), f32({32, 8, 3, 3})}, gradInput)
          .computeCycles,
      macs);
  Attributes gradWeight = conv;
  gradWeight.set("weight_shape", std::vector<int64_t>{32, 8, 3, 3});
  EXPECT_EQ(costOf(OpKind::ConvolutionGradWeight, {f32({1, 16, 32, 32}), f32({1, 32, 32, 32})},
                   gradWeight)
                .computeCycles,
            macs);
  // dW [256, 512] from dY [64, 256] and X [64, 512]: as many MACs as the forward.
  EXPECT_EQ(costOf(OpKind::LinearGradWeight, {f32({64, 256}), f32({64, 512})}).computeCycles,
            macCycles(64.0 * 256 * 512));
}

TEST(CostModelTest, ReshapeIsFree) {
  const costs::OpCost cost =
      costOf(OpKind::Reshape, {f32({64, 512})}, {{"shape", std::vector<int64_t>{512, 64}}});
  EXPECT_EQ(cost.syncCycles, 0u);
  EXPECT_EQ(cost.exchangeCycles, 0u);
  EXPECT_EQ(cost.computeCycles, 0u);
  EXPECT_EQ(cost.total(), 0u);
}

TEST(CostModelTest, ElementwiseFormula) {
  // 100,000 elements: n = ceil(100000 / 1472) = 68, ceil(68 / 12) = 6:
  // 6 x (58 + 18) + 11 = 467 cycles per pass.
  const costs::OpCost relu = costOf(OpKind::Relu, {f32({100000})});
  EXPECT_EQ(relu.computeCycles, 467u);
  EXPECT_EQ(relu.exchangeCycles, 0u);
  EXPECT_EQ(relu.syncCycles, 40u);
  EXPECT_EQ(relu.total(), 507u);
  // Transcendental functions take two passes, gelu three.
  EXPECT_EQ(costOf(OpKind::Exp, {f32({100000})}).computeCycles, 2u * 467u);
  EXPECT_EQ(
      costOf(OpKind::Gelu, {f32({100000})}, {{"approximate", std::string("none")}}).computeCycles,
      3u * 467u);
  // Tiny tensors still pay one full vertex: n = 1 -> 6 x 61 + 11.
  EXPECT_EQ(costOf(OpKind::Relu, {f32({10})}).computeCycles, 377u);
  // The step at 12 elements per tile.
  EXPECT_EQ(costOf(OpKind::Relu, {f32({1472 * 12})}).computeCycles, 377u);
  EXPECT_EQ(costOf(OpKind::Relu, {f32({1472 * 12 + 1})}).computeCycles, 395u);
  // Binary ops cost the broadcast output.
  EXPECT_EQ(costOf(OpKind::Add, {f32({1000, 1}), f32({1, 300})}).computeCycles,
            elementwiseCycles(300000));
  for (uint64_t elements : {1u, 1471u, 1473u, 50000u, 1000000u}) {
    EXPECT_EQ(costOf(OpKind::Affine, {f32({static_cast<int64_t>(elements)})},
                     {{"scale", 2.0}, {"shift", 0.0}})
                  .computeCycles,
              elementwiseCycles(elements))
        << elements;
  }
}

TEST(CostModelTest, ReductionsPayAnExtraExchangeAndSync) {
  // softmax over [100,1000]: 3 passes over 100,000 elements, and the output
  // bytes (400,000) cross the exchange once: ceil(67.9) + 40.
  const costs::OpCost cost = costOf(OpKind::Softmax, {f32({100, 1000})}, {{"dim", int64_t{1}}});
  EXPECT_EQ(cost.computeCycles, 3u * 467u);
  EXPECT_EQ(cost.exchangeCycles, 68u + 40u);
  EXPECT_EQ(cost.syncCycles, 40u);
}

TEST(CostModelTest, LayoutOpsOnlyExchange) {
  const costs::OpCost cost =
      costOf(OpKind::Permute, {f32({100, 1000})}, {{"perm", std::vector<int64_t>{1, 0}}});
  EXPECT_EQ(cost.computeCycles, 0u);
  EXPECT_EQ(cost.exchangeCycles, 68u);
  EXPECT_EQ(cost.syncCycles, 40u);
}

TEST(CostModelTest, SystemConfigValidation) {
  device::IpuSystemConfig config;
  EXPECT_EQ(config.memoryCapacity(), mk2().memoryBytes());
  config.memoryPerIpu = 1000;
  EXPECT_EQ(config.memoryCapacity(), 1000u);
  EXPECT_NO_THROW(config.validate());

  config.numIpus = 0;
  Error error = testing::captureError([&] { config.validate(); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
  EXPECT_EQ(std::string(error.what()), "the number of IPUs must be between 1 and 64, got 0.");

  config.numIpus = 1;
  config.memoryPerIpu = mk2().memoryBytes() + 1;
  error = testing::captureError([&] { config.validate(); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
  EXPECT_TRUE(testing::contains(error.what(), "memory per IPU (940,572,673 bytes (897.00 MiB)) "
                                              "exceeds the Mk2 (GC200) SRAM of 940,572,672 bytes"));
}

} // namespace
} // namespace popsim
