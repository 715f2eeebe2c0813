// Shape helpers: element counts, printing, strides, broadcasting and
// dimension normalisation, including the edge cases (scalars, empty tensors).

#include "ir/shape.h"
#include "ir/tensor_type.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Shape;

TEST(ShapeTest, ElementCount) {
  EXPECT_EQ(ir::elementCount({}), 1); // a scalar holds one element
  EXPECT_EQ(ir::elementCount({7}), 7);
  EXPECT_EQ(ir::elementCount({2, 3, 4}), 24);
  EXPECT_EQ(ir::elementCount({5, 0, 3}), 0);
  EXPECT_EQ(ir::elementCount({1, 1, 1}), 1);
  EXPECT_EQ(ir::elementCount({1024, 1024, 1024}), int64_t{1} << 30);
}

TEST(ShapeTest, ShapeToString) {
  EXPECT_EQ(ir::shapeToString({}), "[]");
  EXPECT_EQ(ir::shapeToString({5}), "[5]");
  EXPECT_EQ(ir::shapeToString({2, 3, 4}), "[2,3,4]");
  EXPECT_EQ(ir::shapeToString({0, 10}), "[0,10]");
}

TEST(ShapeTest, TensorTypeStringAndBytes) {
  const ir::TensorType floats{ir::DType::Float32, {8, 10}};
  EXPECT_EQ(floats.str(), "f32[8,10]");
  EXPECT_EQ(floats.bytes(), 320u);
  const ir::TensorType indices{ir::DType::Int64, {3}};
  EXPECT_EQ(indices.str(), "i64[3]");
  EXPECT_EQ(indices.bytes(), 24u);
  EXPECT_EQ((ir::TensorType{ir::DType::Int32, {}}).str(), "i32[]");
  EXPECT_EQ((ir::TensorType{ir::DType::Bool, {4}}).bytes(), 4u);
  EXPECT_NE(floats, (ir::TensorType{ir::DType::Int32, {8, 10}}));
}

TEST(ShapeTest, ContiguousStrides) {
  EXPECT_EQ(ir::contiguousStrides({}), (std::vector<int64_t>{}));
  EXPECT_EQ(ir::contiguousStrides({5}), (std::vector<int64_t>{1}));
  EXPECT_EQ(ir::contiguousStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(ir::contiguousStrides({2, 1, 3, 5}), (std::vector<int64_t>{15, 15, 5, 1}));
}

TEST(ShapeTest, BroadcastCompatibleShapes) {
  EXPECT_EQ(ir::broadcastShapes({2, 3}, {2, 3}), Shape({2, 3}));
  EXPECT_EQ(ir::broadcastShapes({3, 1}, {1, 4}), Shape({3, 4}));
  EXPECT_EQ(ir::broadcastShapes({2, 3, 4}, {4}), Shape({2, 3, 4}));
  EXPECT_EQ(ir::broadcastShapes({4}, {2, 3, 4}), Shape({2, 3, 4}));
  EXPECT_EQ(ir::broadcastShapes({8, 1, 6, 1}, {7, 1, 5}), Shape({8, 7, 6, 5}));
  EXPECT_EQ(ir::broadcastShapes({}, {2, 3}), Shape({2, 3}));
  EXPECT_EQ(ir::broadcastShapes({}, {}), Shape({}));
  // A size-1 dimension broadcasts to 0 as well.
  EXPECT_EQ(ir::broadcastShapes({1, 3}, {0, 1}), Shape({0, 3}));
}

TEST(ShapeTest, BroadcastIncompatibleShapesIsNullopt) {
  EXPECT_EQ(ir::broadcastShapes({3}, {4}), std::nullopt);
  EXPECT_EQ(ir::broadcastShapes({2, 3}, {3, 2}), std::nullopt);
  EXPECT_EQ(ir::broadcastShapes({2, 1, 3}, {5, 1, 1}), std::nullopt);
  EXPECT_EQ(ir::broadcastShapes({4, 3}, {2, 4, 2}), std::nullopt);
  EXPECT_EQ(ir::broadcastShapes({0}, {2}), std::nullopt);
}

TEST(ShapeTest, NormalizeDim) {
  EXPECT_EQ(ir::normalizeDim(0, 3), 0);
  EXPECT_EQ(ir::normalizeDim(2, 3), 2);
  EXPECT_EQ(ir::normalizeDim(-1, 3), 2);
  EXPECT_EQ(ir::normalizeDim(-3, 3), 0);
  EXPECT_EQ(ir::normalizeDim(3, 3), std::nullopt);
  EXPECT_EQ(ir::normalizeDim(-4, 3), std::nullopt);
  EXPECT_EQ(ir::normalizeDim(0, 0), std::nullopt);
  EXPECT_EQ(ir::normalizeDim(-1, 0), std::nullopt);
  EXPECT_EQ(ir::normalizeDim(0, 1), 0);
  EXPECT_EQ(ir::normalizeDim(-1, 1), 0);
}

} // namespace
} // namespace popsim
