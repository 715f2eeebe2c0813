// The cycle model against hand-computed figures from the public IPU numbers
// (Mk2: 1472 tiles, 16 fp32 MACs per tile-cycle, 1.33 GHz, 7 GB/s host I/O
// with 50,000 cycles of latency).

#include "costs/cost_model.h"
#include "costs/vector_cycles.h"
#include "device/chip_spec.h"
#include "device/ipu_system.h"
#include "ir/graph.h"
#include "ir/op_work.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

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
  // 3000-cycle latency. IPU-Links join a rack's IPUs (a Pod64 too); beyond
  // 64 IPUs the GW-Links between racks (12.5 GB/s) bound the ring.
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 4, 4, mk2()), 6u * (3000u + 21u));
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 4, 64, mk2()), 6u * (3000u + 21u));
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 4, 128, mk2()), 6u * (3000u + 107u));
  EXPECT_EQ(costs::ringAllReduceCycles(4000, 1, 1, mk2()), 0u);
}

// The product each op declares: groups x m x k x n equals its MACs.
ir::OpWork::Product productOf(OpKind kind, const std::vector<ir::TensorType>& inputs,
                              const Attributes& attrs = {}) {
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(graph.addInput("x" + std::to_string(i), inputs[i]));
  }
  const ir::OpWork work = ir::opWork(*graph.addNode(kind, values, attrs));
  const ir::OpWork::Product& p = work.product;
  EXPECT_EQ(p.groups * p.m * p.k * p.n, work.macs);
  return p;
}

auto dims(const ir::OpWork::Product& p) { return std::tuple(p.groups, p.m, p.k, p.n); }

Attributes convAttrs(int64_t groups, int64_t padding = 1) {
  return {{"stride", std::vector<int64_t>{1, 1}},
          {"padding", std::vector<int64_t>{padding, padding}},
          {"dilation", std::vector<int64_t>{1, 1}},
          {"groups", groups}};
}

TEST(CostModelTest, ProductsDeclareTheirMatrixShapes) {
  // linear [64,512] x [256,512]^T: 64 rows, 512 in, 256 out.
  EXPECT_EQ(dims(productOf(OpKind::Linear, {f32({64, 512}), f32({256, 512})})),
            std::tuple(1u, 64u, 512u, 256u));
  // Its weight gradient dW [256, 512] sums over the 64 rows.
  EXPECT_EQ(dims(productOf(OpKind::LinearGradWeight, {f32({64, 256}), f32({64, 512})})),
            std::tuple(1u, 256u, 64u, 512u));
  // A batched matmul: 8 groups of [128,256] x [256,64]; broadcast batches count.
  EXPECT_EQ(dims(productOf(OpKind::MatMul, {f32({8, 128, 256}), f32({256, 64})})),
            std::tuple(8u, 128u, 256u, 64u));
  EXPECT_EQ(dims(productOf(OpKind::MatMul, {f32({2, 1, 4, 5}), f32({3, 5, 6})})),
            std::tuple(6u, 4u, 5u, 6u));
  // A convolution as its implicit product: 32 x 32 output positions, 16
  // channels x 3 x 3 taps, 32 output channels; per group when grouped.
  EXPECT_EQ(dims(productOf(OpKind::Convolution,
                           {f32({1, 16, 32, 32}), f32({32, 16, 3, 3}), f32({32})}, convAttrs(1))),
            std::tuple(1u, 1024u, 144u, 32u));
  EXPECT_EQ(dims(productOf(OpKind::Convolution, {f32({1, 64, 64, 64}), f32({64, 16, 3, 3})},
                           convAttrs(4, 0))),
            std::tuple(4u, 62u * 62u, 144u, 16u));
  // Gradients: the input's sums over the output channels for each tap, the
  // weight's over the output positions.
  Attributes gradInput = convAttrs(2);
  gradInput.set("input_shape", std::vector<int64_t>{1, 16, 32, 32});
  EXPECT_EQ(dims(productOf(OpKind::ConvolutionGradInput, {f32({1, 32, 32, 32}), f32({32, 8, 3, 3})},
                           gradInput)),
            std::tuple(2u, 1024u, 16u, 72u));
  Attributes gradWeight = convAttrs(2);
  gradWeight.set("weight_shape", std::vector<int64_t>{32, 8, 3, 3});
  EXPECT_EQ(dims(productOf(OpKind::ConvolutionGradWeight,
                           {f32({1, 16, 32, 32}), f32({1, 32, 32, 32})}, gradWeight)),
            std::tuple(2u, 16u, 1024u, 72u));
}

TEST(CostModelTest, ManyGroupsGoWholeToTiles) {
  // 2 x 1472 groups of [4,4] x [4,4] in fp32: two groups per tile, which
  // receives 2 x (16 + 16) x 4 bytes at 4 bytes per cycle and does 128 MACs
  // at 16 x 0.6 per cycle.
  const costs::ProductCost cost =
      costs::productCost({2 * 1472, 4, 4, 4}, ir::DType::Float32, 4, mk2());
  EXPECT_EQ(cost.exchangeCycles, 64u);
  EXPECT_EQ(cost.computeCycles, 14u);
  EXPECT_EQ(cost.reductionSyncCycles, 0u);
}

TEST(CostModelTest, ProductsPayForTheOperandsEachTileReceives) {
  for (const ir::OpWork::Product product :
       {ir::OpWork::Product{1, 4096, 768, 3072}, ir::OpWork::Product{1, 64, 512, 256},
        ir::OpWork::Product{204, 197, 64, 197}, ir::OpWork::Product{1, 1, 4096, 1}}) {
    for (ir::DType dtype : {ir::DType::Float32, ir::DType::Float16}) {
      const costs::ProductCost cost = costs::productCost(product, dtype, 4, mk2());
      const double macs = static_cast<double>(product.groups * product.m * product.k * product.n);
      const double rate = (dtype == ir::DType::Float16 ? 64 : 16) * 0.6;
      // Never faster than every tile's AMP units at their rate.
      EXPECT_GE(static_cast<double>(cost.computeCycles), macs / (1472 * rate));
      // Every operand element reaches some tile at 4 bytes per tile-cycle.
      const double operands =
          static_cast<double>(product.groups * (product.m * product.k + product.k * product.n) *
                              ir::elementSize(dtype));
      EXPECT_GE(static_cast<double>(cost.exchangeCycles), operands / (1472 * 4));
    }
  }
  // A large fp16 product keeps the tiles busy: within 15% of the ideal
  // compute, and its exchange is a sizeable share of it (the tiles' blocks
  // of both operands), not the operands' bytes spread over all tiles.
  const costs::ProductCost large =
      costs::productCost({1, 4096, 768, 3072}, ir::DType::Float16, 2, mk2());
  const double ideal = 4096.0 * 768 * 3072 / (1472 * 64 * 0.6);
  EXPECT_LE(static_cast<double>(large.computeCycles), 1.15 * ideal);
  EXPECT_GT(static_cast<double>(large.exchangeCycles), 0.2 * ideal);
  // A dot product splits its k over the tiles and adds the partial sums in a
  // second superstep.
  const costs::ProductCost dot =
      costs::productCost({1, 1, 1 << 20, 1}, ir::DType::Float32, 4, mk2());
  EXPECT_GT(dot.reductionSyncCycles, 0u);
}

TEST(CostModelTest, ProductsCostTheirPlan) {
  const costs::OpCost linear = costOf(OpKind::Linear, {f32({64, 512}), f32({256, 512})});
  const costs::ProductCost plan =
      costs::productCost({1, 64, 512, 256}, ir::DType::Float32, 4, mk2());
  EXPECT_EQ(linear.computeCycles, plan.computeCycles);
  EXPECT_EQ(linear.exchangeCycles, plan.exchangeCycles);
  EXPECT_EQ(linear.syncCycles, 40u + plan.reductionSyncCycles);
}

TEST(CostModelTest, ReshapeIsFree) {
  const costs::OpCost cost =
      costOf(OpKind::Reshape, {f32({64, 512})}, {{"shape", std::vector<int64_t>{512, 64}}});
  EXPECT_EQ(cost.syncCycles, 0u);
  EXPECT_EQ(cost.exchangeCycles, 0u);
  EXPECT_EQ(cost.computeCycles, 0u);
  EXPECT_EQ(cost.total(), 0u);
}

// An op popsim widens to float32 only to round once costs what the IPU's
// float16 vertex does; its casts cost nothing.
TEST(CostModelTest, Float16OnTheIpuOpsCostFloat16) {
  const auto onIpu = [](OpKind kind, const std::vector<ir::TensorType>& inputs,
                        const Attributes& attrs) {
    Graph graph;
    std::vector<Value*> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      values.push_back(graph.addInput("x" + std::to_string(i), inputs[i]));
    }
    Node* node = graph.addNode(kind, values, attrs);
    ir::Placement placement = node->placement();
    placement.float16OnIpu = true;
    node->setPlacement(placement);
    return costs::estimateOpCost(*node, mk2());
  };
  const ir::TensorType half{ir::DType::Float16, {100, 1000}};
  EXPECT_EQ(onIpu(OpKind::Cast, {half}, {{"dtype", std::string("f32")}}).total(), 0u);
  EXPECT_EQ(onIpu(OpKind::Cast, {f32({100, 1000})}, {{"dtype", std::string("f16")}}).total(), 0u);
  EXPECT_GT(costOf(OpKind::Cast, {half}, {{"dtype", std::string("f32")}}).total(), 0u);
  // softmax of float16s: 4 elements per vector, half the bytes exchanged.
  const Attributes lastDim{{"dim", int64_t{1}}};
  const costs::OpCost widened = onIpu(OpKind::Softmax, {f32({100, 1000})}, lastDim);
  const costs::OpCost native = costOf(OpKind::Softmax, {half}, lastDim);
  EXPECT_EQ(widened.computeCycles, native.computeCycles);
  EXPECT_EQ(widened.exchangeCycles, native.exchangeCycles);
  EXPECT_LT(widened.total(), costOf(OpKind::Softmax, {f32({100, 1000})}, lastDim).total());
}

TEST(CostModelTest, ElementwiseFormula) {
  // 100,000 elements: n = ceil(100000 / 1472) = 68, ceil(68 / 12) = 6:
  // 6 x (58 + 18) + 11 = 467 cycles per pass.
  const costs::OpCost relu = costOf(OpKind::Relu, {f32({100000})});
  EXPECT_EQ(relu.computeCycles, 467u);
  EXPECT_EQ(relu.exchangeCycles, 0u);
  EXPECT_EQ(relu.syncCycles, 40u);
  EXPECT_EQ(relu.total(), 507u);
  // Transcendental functions take PopLibs' cycles per vector instead of a
  // plain operation's 3: float32 exp 2 + 4, GELU 2 + 18.
  EXPECT_EQ(costOf(OpKind::Exp, {f32({100000})}).computeCycles, 6u * (58 + 6 * 6) + 11);
  EXPECT_EQ(
      costOf(OpKind::Gelu, {f32({100000})}, {{"approximate", std::string("none")}}).computeCycles,
      6u * (58 + 20 * 6) + 11);
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

TEST(CostModelTest, AVertexCostsPopLibsCyclesPerVector) {
  using ir::DType;
  using ir::VectorOp;
  // One operation alone costs PopLibs' figure per 64-bit vector (4 float16
  // or 2 float32 values): add 3, divide 21 and 10, sqrt 23 and 10, sigmoid 6
  // and 12, exp 4 and 6 (popopsCycleEstimators.hpp).
  EXPECT_EQ(costs::vertexCyclesPerVector({}, DType::Float16), 3u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Plain}, DType::Float32), 3u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Divide}, DType::Float16), 21u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Divide}, DType::Float32), 10u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Sqrt}, DType::Float16), 23u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Sqrt}, DType::Float32), 10u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Sigmoid}, DType::Float16), 6u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Sigmoid}, DType::Float32), 12u);
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Exp}, DType::Float16), 4u);
  // A fused vertex loads and stores once: silu's sigmoid and multiply.
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Sigmoid, VectorOp::Plain}, DType::Float16), 7u);
  // Integer data take float32's figures.
  EXPECT_EQ(costs::vertexCyclesPerVector({VectorOp::Divide}, DType::Int32), 10u);
}

TEST(CostModelTest, ElementwiseFunctionsCostTheirArithmetic) {
  // 100,000 float16 elements: 68 per tile, ceil(68 / 24) = 3 vectors per worker.
  const auto f16 = [](int64_t n) { return ir::TensorType{ir::DType::Float16, {n}}; };
  const auto vertex = [](uint64_t cyclesPerVector) { return 6 * (58 + cyclesPerVector * 3) + 11; };
  EXPECT_EQ(costOf(OpKind::Div, {f16(100000), f16(100000)}).computeCycles, vertex(21));
  EXPECT_EQ(costOf(OpKind::Mul, {f16(100000), f16(100000)}).computeCycles, vertex(3));
  EXPECT_EQ(costOf(OpKind::Sigmoid, {f16(100000)}).computeCycles, vertex(6));
  // silu: sigmoid and a multiply; its gradient the sigmoid and five plain
  // operations (s (1 + x (1 - s)) times the incoming gradient).
  const Attributes silu = {{"function", std::string("silu")}, {"params", std::vector<double>{}}};
  EXPECT_EQ(costOf(OpKind::Pointwise, {f16(100000)}, silu).computeCycles, vertex(7));
  EXPECT_EQ(costOf(OpKind::PointwiseGrad, {f16(100000), f16(100000)}, silu).computeCycles,
            vertex(11));
  // A binary function's gradient: pow's with respect to its exponent,
  // a^b log(a), against its base's b a^(b - 1).
  const Attributes pow = {{"function", std::string("pow")}};
  const auto powGrad = [&](int64_t operand) {
    Attributes attrs = pow;
    attrs.set("operand", operand);
    return costOf(OpKind::BinaryPointwiseGrad, {f16(100000), f16(100000), f16(100000)}, attrs)
        .computeCycles;
  };
  EXPECT_EQ(powGrad(0), vertex(2 + 1298 + 2));
  EXPECT_EQ(powGrad(1), vertex(2 + 1298 + 2 + 2));
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
  CoreError error = testing::captureError([&] { config.validate(); });
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
