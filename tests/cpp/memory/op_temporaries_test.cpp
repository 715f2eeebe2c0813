// Temporaries of matmuls and convolutions, and the serial passes a budget
// (availableMemoryProportion x IPU memory) forces on them.

#include "costs/cost_model.h"
#include "device/chip_spec.h"
#include "ir/graph.h"
#include "memory/op_temporaries.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using testing::f32;

// y[256,1024] = x[256,512] @ w[1024,512]^T + b: operands 512 KiB and 2 MiB,
// output 1 MiB.
constexpr uint64_t kX = 256 * 512 * 4;
constexpr uint64_t kW = 1024 * 512 * 4;
constexpr uint64_t kY = 256 * 1024 * 4;

const Node* linear(Graph& graph) {
  return graph.addNode(OpKind::Linear,
                       {graph.addInput("x", f32({256, 512})), graph.addInput("w", f32({1024, 512})),
                        graph.addInput("b", f32({1024}))});
}

TEST(OpTemporariesTest, UnboundedAMatmulHoldsItsOperandsAndPartials) {
  Graph graph;
  const memory::OpTemporaries temporaries = memory::planOpTemporaries(*linear(graph));
  EXPECT_EQ(temporaries.unboundedBytes, kX + kW + kY);
  EXPECT_EQ(temporaries.bytes, kX + kW + kY);
  EXPECT_EQ(temporaries.passes, 1u);
  EXPECT_EQ(temporaries.smallerOperandBytes, kX);
}

TEST(OpTemporariesTest, ABudgetSplitsTheOpIntoEqualPasses) {
  Graph graph;
  const Node* node = linear(graph);
  const uint64_t unbounded = kX + kW + kY; // 3.5 MiB
  EXPECT_EQ(memory::planOpTemporaries(*node, unbounded).passes, 1u);
  const memory::OpTemporaries two = memory::planOpTemporaries(*node, unbounded - 1);
  EXPECT_EQ(two.passes, 2u);
  EXPECT_EQ(two.bytes, unbounded / 2);
  const memory::OpTemporaries seven = memory::planOpTemporaries(*node, 512 * 1024);
  EXPECT_EQ(seven.passes, 7u);
  EXPECT_EQ(seven.bytes, 512u * 1024u);
  EXPECT_LE(memory::planOpTemporaries(*node, 1000).bytes, 1000u);
}

TEST(OpTemporariesTest, OnlyMatmulsAndConvolutionsArePlanned) {
  Graph graph;
  const Node* relu = graph.addNode(OpKind::Relu, {graph.addInput("x", f32({1 << 20}))});
  const memory::OpTemporaries temporaries = memory::planOpTemporaries(*relu, 16);
  EXPECT_FALSE(memory::hasPlannedTemporaries(*relu));
  EXPECT_EQ(temporaries.bytes, 0u);
  EXPECT_EQ(temporaries.passes, 1u);
}

TEST(OpTemporariesTest, EachExtraPassSyncsAndExchangesTheSmallerOperandAgain) {
  Graph graph;
  const Node* node = linear(graph);
  const device::ChipSpec& mk2 = device::chipSpec(device::ChipVersion::Mk2);
  const costs::OpCost one = costs::estimateOpCost(*node, mk2);
  const costs::OpCost seven =
      costs::estimateOpCost(*node, mk2, memory::planOpTemporaries(*node, 512 * 1024));
  // x: 512 KiB over 1472 tiles at 4 bytes per tile-cycle.
  const uint64_t exchangeX = (kX + 1472 * 4 - 1) / (1472 * 4);
  EXPECT_EQ(seven.computeCycles, one.computeCycles);
  EXPECT_EQ(seven.syncCycles, one.syncCycles + 6 * 40);
  EXPECT_EQ(seven.exchangeCycles, one.exchangeCycles + 6 * exchangeX);
}

} // namespace
} // namespace popsim
