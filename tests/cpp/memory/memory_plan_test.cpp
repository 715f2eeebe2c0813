// The memory planner on tiny programs built by hand: lifetimes from the
// schedule, shared offsets only between buffers that are never live together,
// views aliasing their input, fixed regions for leaves and the live peak.

#include "common/error.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "memory/memory_plan.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;
using memory::Lifetime;
using memory::MemoryPlan;
using memory::MemoryRegion;
using memory::TensorSlot;
using testing::f32;

size_t regionBytes(const MemoryPlan& plan, MemoryRegion region, size_t ipu = 0) {
  return plan.ipus().at(ipu).regionBytes[static_cast<size_t>(region)];
}

// Every pair of activation buffers on the same IPU whose lifetimes overlap
// occupies disjoint bytes, and every buffer lies inside its arena.
void expectNoLiveOverlap(const MemoryPlan& plan) {
  std::vector<const TensorSlot*> buffers;
  for (const Value* root : plan.roots()) {
    const TensorSlot& slot = plan.slot(root);
    if (slot.region == MemoryRegion::Activations) {
      buffers.push_back(&slot);
      EXPECT_LE(slot.offset + slot.bytes, regionBytes(plan, slot.region, slot.ipu))
          << "value #" << root->id();
      EXPECT_EQ(slot.offset % 64, 0u) << "value #" << root->id();
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const TensorSlot& a = *buffers[i];
      const TensorSlot& b = *buffers[j];
      if (a.ipu != b.ipu || !a.lifetime.overlaps(b.lifetime)) {
        continue;
      }
      const bool disjoint = a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
      EXPECT_TRUE(disjoint) << "buffers " << i << " [" << a.offset << ", " << a.offset + a.bytes
                            << ") and " << j << " [" << b.offset << ", " << b.offset + b.bytes
                            << ") are live together";
    }
  }
}

void expectLifetime(const MemoryPlan& plan, const Value* value, int64_t first, int64_t last) {
  const Lifetime& lifetime = plan.slot(value).lifetime;
  EXPECT_EQ(lifetime.first, first) << "value #" << value->id();
  EXPECT_EQ(lifetime.last, last) << "value #" << value->id();
}

TEST(MemoryPlanTest, LifetimeOverlap) {
  EXPECT_TRUE((Lifetime{0, 1}.overlaps(Lifetime{1, 2})));
  EXPECT_TRUE((Lifetime{1, 2}.overlaps(Lifetime{0, 1})));
  EXPECT_TRUE((Lifetime{0, 5}.overlaps(Lifetime{2, 3})));
  EXPECT_FALSE((Lifetime{0, 1}.overlaps(Lifetime{2, 3})));
  EXPECT_FALSE((Lifetime{2, 3}.overlaps(Lifetime{0, 1})));
}

TEST(MemoryPlanTest, ChainReusesMemoryOfDeadBuffers) {
  // x -> relu -> relu -> relu -> relu (output): each step reads one 64-byte
  // buffer and writes another, so two buffers suffice.
  Graph graph;
  Value* x = graph.addInput("x", f32({16}));
  std::vector<Value*> steps;
  Value* v = x;
  for (int i = 0; i < 4; ++i) {
    v = graph.apply(OpKind::Relu, {v});
    steps.push_back(v);
  }
  graph.addOutput(v);

  const MemoryPlan plan = memory::planMemory(graph);

  expectLifetime(plan, steps[0], 0, 1);
  expectLifetime(plan, steps[1], 1, 2);
  expectLifetime(plan, steps[2], 2, 3);
  expectLifetime(plan, steps[3], 3, 4); // graph output: live to the end
  expectNoLiveOverlap(plan);
  EXPECT_EQ(plan.slot(steps[0]).offset, plan.slot(steps[2]).offset);
  EXPECT_EQ(plan.slot(steps[1]).offset, plan.slot(steps[3]).offset);
  EXPECT_NE(plan.slot(steps[0]).offset, plan.slot(steps[1]).offset);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Activations), 128u);
  EXPECT_EQ(plan.ipus()[0].activationLivePeak, 128u);
}

TEST(MemoryPlanTest, LivePeakOfAChainWithDifferentSizes) {
  // Step 0: a (64 B). Step 1: a + b (64 + 128). Step 2: b + c (128 + 32).
  // Step 3: c + d (32 + 32). Step 4: d. Peak: 192 bytes at step 1.
  Graph graph;
  Value* x = graph.addInput("x", f32({16}));
  Value* a = graph.apply(OpKind::Relu, {x});
  Value* b = graph.apply(OpKind::Concat, {a, a}, {{"dim", int64_t{0}}});
  Value* c = graph.apply(
      OpKind::Slice, {b},
      {{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{8}}, {"step", int64_t{1}}});
  Value* d = graph.apply(OpKind::Exp, {c});
  graph.addOutput(d);

  const MemoryPlan plan = memory::planMemory(graph);

  expectLifetime(plan, a, 0, 1);
  expectLifetime(plan, b, 1, 2);
  expectLifetime(plan, c, 2, 3);
  expectLifetime(plan, d, 3, 4);
  EXPECT_EQ(plan.slot(b).bytes, 128u);
  EXPECT_EQ(plan.slot(c).bytes, 32u);
  const memory::IpuMemoryLayout& layout = plan.ipus()[0];
  EXPECT_EQ(layout.activationLivePeak, 192u);
  EXPECT_EQ(layout.activationPeakStep, 1);
  EXPECT_LE(layout.activationLivePeak, regionBytes(plan, MemoryRegion::Activations));
  expectNoLiveOverlap(plan);
}

TEST(MemoryPlanTest, OverlappingLifetimesNeverShareBytes) {
  // A diamond with long-lived values of assorted, unaligned sizes.
  Graph graph;
  Value* x = graph.addInput("x", f32({3, 5}));
  Value* w = graph.addWeight("w", f32({7, 5}), true);
  Value* a = graph.apply(OpKind::Linear, {x, w});                           // [3,7]
  Value* b = graph.apply(OpKind::Exp, {a});                                 // [3,7]
  Value* c = graph.apply(OpKind::Concat, {a, b, a}, {{"dim", int64_t{1}}}); // [3,21]
  Value* d = graph.apply(OpKind::Reshape, {c}, {{"shape", std::vector<int64_t>{63}}});
  Value* e = graph.apply(OpKind::Sigmoid, {b});
  Value* f = graph.apply(OpKind::Softmax, {c}, {{"dim", int64_t{1}}});
  Value* g = graph.apply(OpKind::Tanh, {e});
  Value* h = graph.apply(OpKind::ReduceSum, {f},
                         {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}}); // [3]
  Value* i = graph.apply(
      OpKind::Add, {g, graph.apply(OpKind::Reshape, {h}, {{"shape", std::vector<int64_t>{3, 1}}})});
  graph.addOutput(i);
  graph.addOutput(d);

  const MemoryPlan plan = memory::planMemory(graph);

  expectNoLiveOverlap(plan);
  const int64_t end = static_cast<int64_t>(graph.nodes().size());
  EXPECT_EQ(plan.slot(i).lifetime.last, end);
  EXPECT_EQ(plan.slot(d).lifetime.last, end); // through the view
  EXPECT_EQ(plan.storageRoot(d), c);
  expectLifetime(plan, a, 0, 2);
  expectLifetime(plan, b, 1, 4);
  size_t largest = 0;
  for (const Value* root : plan.roots()) {
    const TensorSlot& slot = plan.slot(root);
    if (slot.region == MemoryRegion::Activations) {
      largest = std::max(largest, slot.bytes);
    }
  }
  const memory::IpuMemoryLayout& layout = plan.ipus()[0];
  EXPECT_GE(layout.activationLivePeak, largest);
  EXPECT_LE(layout.activationLivePeak, regionBytes(plan, MemoryRegion::Activations));
}

TEST(MemoryPlanTest, ReshapeOutputsAliasTheirInput) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 8}));
  Value* a = graph.apply(OpKind::Relu, {x});                                              // step 0
  Value* flat = graph.apply(OpKind::Reshape, {a}, {{"shape", std::vector<int64_t>{16}}}); // 1
  Value* square = graph.apply(OpKind::Reshape, {flat}, {{"shape", std::vector<int64_t>{4, 4}}});
  Value* e = graph.apply(OpKind::Exp, {square}); // step 3
  Value* s = graph.apply(OpKind::Sqrt, {e});     // step 4
  graph.addOutput(s);
  Value* viewOfInput = graph.apply(OpKind::Reshape, {x}, {{"shape", std::vector<int64_t>{16}}});
  graph.addOutput(viewOfInput);

  const MemoryPlan plan = memory::planMemory(graph);

  EXPECT_EQ(plan.storageRoot(flat), a);
  EXPECT_EQ(plan.storageRoot(square), a);
  EXPECT_EQ(plan.storageRoot(a), a);
  EXPECT_EQ(plan.storageRoot(viewOfInput), x);
  EXPECT_TRUE(plan.hasSlot(a));
  EXPECT_TRUE(plan.hasSlot(flat));
  Graph other;
  EXPECT_FALSE(plan.hasSlot(other.addInput("y", f32({1}))));
  EXPECT_EQ(&plan.slot(flat), &plan.slot(a));
  EXPECT_EQ(&plan.slot(square), &plan.slot(a));
  EXPECT_EQ(plan.slot(viewOfInput).region, MemoryRegion::InputStreams);
  // The root lives until its views' last use (exp at step 3).
  expectLifetime(plan, a, 0, 3);
  // Views own no storage.
  for (const Value* root : plan.roots()) {
    EXPECT_NE(root, flat);
    EXPECT_NE(root, square);
    EXPECT_NE(root, viewOfInput);
  }
  EXPECT_EQ(plan.roots().size(), 4u); // x, a, e, s
  // a and e are live together at step 3, so they cannot share bytes.
  EXPECT_NE(plan.slot(a).offset, plan.slot(e).offset);
  expectNoLiveOverlap(plan);
}

TEST(MemoryPlanTest, OutputsReachedThroughAViewLiveToTheEnd) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* a = graph.apply(OpKind::Exp, {x});
  Value* view = graph.apply(OpKind::Reshape, {a}, {{"shape", std::vector<int64_t>{2, 2}}});
  Value* b = graph.apply(OpKind::Relu, {x});
  Value* c = graph.apply(OpKind::Tanh, {b});
  graph.addOutput(c);
  graph.addOutput(view);

  const MemoryPlan plan = memory::planMemory(graph);

  expectLifetime(plan, a, 0, 4);
  expectLifetime(plan, b, 2, 3);
  expectLifetime(plan, c, 3, 4);
  expectNoLiveOverlap(plan);
}

TEST(MemoryPlanTest, LeavesGetAlignedRegionsOfTheirOwn) {
  Graph graph;
  Value* x1 = graph.addInput("x1", f32({3}));          // 12 B -> 64
  Value* x2 = graph.addInput("x2", f32({33}));         // 132 B -> 192
  Value* w1 = graph.addWeight("w1", f32({5}), true);   // 20 B -> 64
  Value* w2 = graph.addWeight("w2", f32({17}), true);  // 68 B -> 128
  Value* w3 = graph.addWeight("w3", f32({16}), false); // 64 B -> 64
  Value* c1 = graph.addScalarConstant(1.0f);           // 4 B -> 64
  Value* c2 = graph.addConstant(f32({33}), testing::bytesOf(std::vector<float>(33, 0.0f))); // 192
  graph.addOutput(graph.apply(OpKind::Add, {x1, c1}));
  graph.addOutput(graph.apply(OpKind::Add, {x2, c2}));
  graph.addOutput(graph.apply(OpKind::Mul, {w1, w1}));
  graph.addOutput(graph.apply(OpKind::Mul, {w2, w2}));
  graph.addOutput(graph.apply(OpKind::Mul, {w3, w3}));

  const MemoryPlan plan = memory::planMemory(graph);

  EXPECT_EQ(plan.slot(x1).region, MemoryRegion::InputStreams);
  EXPECT_EQ(plan.slot(x1).offset, 0u);
  EXPECT_EQ(plan.slot(x2).offset, 64u);
  EXPECT_EQ(plan.slot(x2).bytes, 132u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::InputStreams), 64u + 192u);

  EXPECT_EQ(plan.slot(w1).region, MemoryRegion::Weights);
  EXPECT_EQ(plan.slot(w1).offset, 0u);
  EXPECT_EQ(plan.slot(w2).offset, 64u);
  EXPECT_EQ(plan.slot(w3).offset, 192u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Weights), 64u + 128u + 64u);

  EXPECT_EQ(plan.slot(c1).region, MemoryRegion::Constants);
  EXPECT_EQ(plan.slot(c2).offset, 64u);
  EXPECT_EQ(plan.slot(c2).bytes, 132u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Constants), 64u + 192u);

  // Always live: from before the first step to after the last.
  const int64_t end = static_cast<int64_t>(graph.nodes().size());
  for (const Value* leaf : {x1, x2, w1, w2, w3, c1, c2}) {
    expectLifetime(plan, leaf, -1, end);
  }
  // Five outputs of 12, 132, 20, 68 and 64 bytes, all live to the end.
  EXPECT_EQ(plan.ipus()[0].activationLivePeak, 12u + 132u + 20u + 68u + 64u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Activations), 64u + 192u + 64u + 128u + 64u);
  const memory::IpuMemoryLayout& layout = plan.ipus()[0];
  EXPECT_EQ(layout.total(), 256u + 256u + 256u + 512u);
  expectNoLiveOverlap(plan);
}

TEST(MemoryPlanTest, CustomAlignment) {
  Graph graph;
  Value* x = graph.addInput("x", f32({3}));
  Value* y = graph.addInput("y", f32({5}));
  graph.addOutput(graph.apply(OpKind::Relu, {x}));
  graph.addOutput(graph.apply(OpKind::Relu, {y}));
  memory::MemoryPlanOptions options;
  options.alignment = 16;
  const MemoryPlan plan = memory::planMemory(graph, options);
  EXPECT_EQ(plan.slot(y).offset, 16u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::InputStreams), 16u + 32u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Activations), 16u + 32u);
}

TEST(MemoryPlanTest, BuffersFollowTheirNodesIpu) {
  Graph graph;
  Value* x = graph.addInput("x", f32({8}));
  Value* w = graph.addWeight("w", f32({8}), true);
  Value* a = graph.apply(OpKind::Relu, {x});
  ir::Node* second = graph.addNode(OpKind::Mul, {a, w});
  second->setPlacement({"stage1", 1, 1});
  graph.addOutput(second->output());
  memory::MemoryPlanOptions options;
  options.numIpus = 2;

  const MemoryPlan plan = memory::planMemory(graph, options);

  ASSERT_EQ(plan.ipus().size(), 2u);
  EXPECT_EQ(plan.slot(x).ipu, 0);
  EXPECT_EQ(plan.slot(a).ipu, 0);
  EXPECT_EQ(plan.slot(w).ipu, 1); // its first user's IPU
  EXPECT_EQ(plan.slot(second->output()).ipu, 1);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Weights, 0), 0u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Weights, 1), 64u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Activations, 0), 64u);
  EXPECT_EQ(regionBytes(plan, MemoryRegion::Activations, 1), 64u);
  expectNoLiveOverlap(plan);

  const CoreError error = testing::captureError([&] { memory::planMemory(graph); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
  EXPECT_EQ(std::string(error.what()), "a tensor is placed on IPU 1 but the system has 1 IPU(s).");
}

// A float16 op popsim computes in float32 so that it rounds once: the
// simulated IPU holds its values in float16 and skips the casts, while the
// host's buffers keep the float32 copies popsim computes with.
TEST(MemoryPlanTest, Float16OnTheIpuValuesTakeFloat16Bytes) {
  Graph graph;
  Value* x = graph.addInput("x", {ir::DType::Float16, {4, 64}});
  Value* half = graph.apply(OpKind::Relu, {x}); // step 0: 512 bytes
  const auto widened = [&](OpKind kind, std::vector<Value*> inputs, ir::Attributes attrs) {
    Value* value = graph.apply(kind, std::move(inputs), std::move(attrs));
    ir::Placement placement = value->producer()->placement();
    placement.float16OnIpu = true;
    value->producer()->setPlacement(placement);
    return value;
  };
  Value* wide = widened(OpKind::Cast, {half}, {{"dtype", std::string("f32")}});  // step 1
  Value* exp = widened(OpKind::Exp, {wide}, {});                                 // step 2
  Value* narrow = widened(OpKind::Cast, {exp}, {{"dtype", std::string("f16")}}); // step 3
  graph.addOutput(graph.apply(OpKind::Relu, {narrow}));                          // step 4

  const MemoryPlan simulated = memory::planMemory(graph);
  EXPECT_EQ(simulated.storageRoot(wide), half);
  EXPECT_EQ(simulated.storageRoot(narrow), exp);
  EXPECT_EQ(simulated.slot(exp).bytes, 512u); // 4 x 64 float16s, not float32s
  EXPECT_EQ(memory::simulatedBytes(*exp), 512u);
  EXPECT_EQ(memory::simulatedBytes(*half), 512u);
  EXPECT_TRUE(ir::isFreeOnIpu(*wide->producer()));
  EXPECT_FALSE(ir::isFreeOnIpu(*exp->producer()));
  expectNoLiveOverlap(simulated);

  memory::MemoryPlanOptions host;
  host.hostStorage = true;
  const MemoryPlan buffers = memory::planMemory(graph, host);
  EXPECT_EQ(buffers.storageRoot(wide), wide);
  EXPECT_EQ(buffers.storageRoot(narrow), narrow);
  EXPECT_EQ(buffers.slot(exp).bytes, 1024u); // popsim computes in float32
}

TEST(MemoryPlanTest, EmptyGraph) {
  Graph graph;
  const MemoryPlan plan = memory::planMemory(graph);
  ASSERT_EQ(plan.ipus().size(), 1u);
  EXPECT_EQ(plan.ipus()[0].total(), 0u);
  EXPECT_EQ(plan.ipus()[0].activationLivePeak, 0u);
  EXPECT_TRUE(plan.roots().empty());
}

} // namespace
} // namespace popsim
