// The binary function table: derivatives agree with central differences,
// integer values agree with the float ones where both are exact, and the
// schema checks dtypes, shapes and the function's name.

#include "ir/binary_functions.h"
#include "ir/graph.h"
#include "ir/vector_arithmetic.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace popsim {
namespace {

// Points away from ties, zeros and the rounding functions' steps.
const std::vector<std::pair<double, double>> kPoints = {
    {1.3, 0.7}, {-2.1, 0.9}, {0.45, -1.6}, {-0.8, -2.3}, {2.6, 1.9}};

TEST(BinaryFunctionsTest, DerivativesMatchCentralDifferences) {
  for (const ir::BinaryFunction& function : ir::binaryFunctions()) {
    if (function.value == nullptr || function.result == ir::BinaryResult::Bool) continue;
    const std::string name(function.name);
    for (auto [a, b] : kPoints) {
      if (name == "pow" && a < 0) a = -a;      // real powers of positive bases
      if (name == "xlogy" && b < 0) b = -b;    // real logarithms of positive numbers
      if (name == "xlog1py" && b < -1) b = -b; // and of 1 + b
      const double h = 1e-6;
      const double da = (function.value(a + h, b) - function.value(a - h, b)) / (2 * h);
      const double db = (function.value(a, b + h) - function.value(a, b - h)) / (2 * h);
      const double expectedA = function.derivativeA ? function.derivativeA(a, b) : 0.0;
      const double expectedB = function.derivativeB ? function.derivativeB(a, b) : 0.0;
      EXPECT_NEAR(expectedA, da, 1e-5 * std::max(1.0, std::fabs(da))) << name << " at " << a;
      EXPECT_NEAR(expectedB, db, 1e-5 * std::max(1.0, std::fabs(db))) << name << " at " << b;
    }
  }
}

TEST(BinaryFunctionsTest, IntegerValuesAgreeWithFloatValues) {
  for (const ir::BinaryFunction& function : ir::binaryFunctions()) {
    if (function.value == nullptr || function.integerValue == nullptr) continue;
    const std::string name(function.name);
    for (int64_t a = -7; a <= 7; ++a) {
      for (int64_t b = -4; b <= 4; ++b) {
        if (b == 0 && function.dividesIntegers) continue;
        if (name == "pow" && b < 0) continue; // integers to negative powers truncate
        EXPECT_EQ(static_cast<double>(function.integerValue(a, b)),
                  function.value(static_cast<double>(a), static_cast<double>(b)))
            << name << "(" << a << ", " << b << ")";
      }
    }
  }
}

TEST(BinaryFunctionsTest, RoundedDivisionsAndRemaindersFollowPython) {
  const ir::BinaryFunction* floorDivide = ir::findBinaryFunction("div_floor");
  const ir::BinaryFunction* remainder = ir::findBinaryFunction("remainder");
  const ir::BinaryFunction* power = ir::findBinaryFunction("pow");
  EXPECT_EQ(floorDivide->integerValue(-7, 2), -4);
  EXPECT_EQ(floorDivide->value(-7.0, 2.0), -4.0);
  EXPECT_EQ(remainder->integerValue(-7, 3), 2);
  EXPECT_EQ(remainder->integerValue(7, -3), -2);
  EXPECT_EQ(ir::findBinaryFunction("div_trunc")->integerValue(-7, 2), -3);
  EXPECT_EQ(power->integerValue(-1, -3), -1);
  EXPECT_EQ(power->integerValue(2, -1), 0);
  EXPECT_EQ(power->integerValue(3, 4), 81);
  EXPECT_TRUE(std::isnan(ir::findBinaryFunction("maximum")->value(NAN, 1.0)));
  EXPECT_EQ(ir::findBinaryFunction("fmax")->value(NAN, 1.0), 1.0);
}

TEST(BinaryFunctionsTest, SchemaChecksDtypesAndShapes) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", testing::f32({2, 3}));
  ir::Value* row = graph.addInput("row", testing::f32({3}));
  ir::Value* counts = graph.addInput("counts", {ir::DType::Int64, {2, 1}});
  const auto apply = [&](const char* function, ir::Value* a, ir::Value* b) {
    return graph.apply(ir::OpKind::BinaryPointwise, {a, b}, {{"function", std::string(function)}});
  };
  EXPECT_EQ(apply("gt", x, row)->type(), (ir::TensorType{ir::DType::Bool, {2, 3}}));
  EXPECT_EQ(apply("remainder", counts, counts)->type(), (ir::TensorType{ir::DType::Int64, {2, 1}}));
  EXPECT_TRUE(testing::contains(testing::captureError([&] { apply("gt", x, counts); }).what(),
                                "gt needs operands of one dtype"));
  EXPECT_TRUE(
      testing::contains(testing::captureError([&] { apply("atan2", counts, counts); }).what(),
                        "atan2 takes float tensors"));
  EXPECT_TRUE(testing::contains(testing::captureError([&] { apply("bitwise_and", x, x); }).what(),
                                "bitwise_and takes integer or bool tensors"));
  EXPECT_EQ(testing::captureError([&] { apply("no_such_function", x, x); }).kind(),
            ErrorKind::Compilation);
  ir::Value* mask = apply("lt", x, row);
  EXPECT_EQ(graph.apply(ir::OpKind::Where, {mask, row, x})->type(), testing::f32({2, 3}));
  EXPECT_TRUE(testing::contains(testing::captureError([&] {
                                  graph.apply(ir::OpKind::Where, {x, x, x});
                                }).what(),
                                "input 0 (condition) must be bool"));
}

TEST(ExtremumOpsTest, SchemaKeepsTheReducedDimAndChecksItsAttributes) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", testing::f32({2, 5, 3}));
  const auto attrs = [](const char* function, int64_t dim, const char* ties) {
    return ir::Attributes{
        {"function", std::string(function)}, {"dim", dim}, {"ties", std::string(ties)}};
  };
  ir::Value* y = graph.apply(ir::OpKind::ReduceExtremum, {x}, attrs("max", 1, "first"));
  EXPECT_EQ(y->type(), testing::f32({2, 1, 3}));
  ir::Value* index = graph.apply(ir::OpKind::ArgExtremum, {x},
                                 {{"function", std::string("min")}, {"dim", int64_t{2}}});
  EXPECT_EQ(index->type(), (ir::TensorType{ir::DType::Int64, {2, 5, 1}}));
  EXPECT_TRUE(testing::contains(testing::captureError([&] {
                                  graph.apply(ir::OpKind::ReduceExtremum, {x},
                                              attrs("max", 3, "split"));
                                }).what(),
                                "dim 3 is outside the rank 3"));
  EXPECT_TRUE(testing::contains(testing::captureError([&] {
                                  graph.apply(ir::OpKind::ReduceExtremum, {x},
                                              attrs("mode", 0, "split"));
                                }).what(),
                                "function must be \"max\", \"min\", \"median\" or "
                                "\"nanmedian\", got \"mode\""));
  EXPECT_TRUE(testing::contains(
      testing::captureError([&] {
        graph.apply(ir::OpKind::ReduceExtremumGrad, {x, x, y}, attrs("max", 1, "first"));
      }).what(),
      "input 0 (grad_output) must have shape [2,1,3]"));
}

TEST(ProductOpsTest, SchemaKeepsTheDtypeAndRefusesNarrowIntegers) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", testing::f32({4, 3}));
  ir::Value* counts = graph.addInput("counts", ir::TensorType{ir::DType::Int64, {4, 3}});
  ir::Value* y = graph.apply(ir::OpKind::ReduceProduct, {x}, {{"dim", int64_t{0}}});
  EXPECT_EQ(y->type(), testing::f32({1, 3}));
  EXPECT_EQ(graph.apply(ir::OpKind::CumulativeProduct, {counts}, {{"dim", int64_t{1}}})->type(),
            (ir::TensorType{ir::DType::Int64, {4, 3}}));
  ir::Value* narrow = graph.addInput("narrow", ir::TensorType{ir::DType::Int32, {4}});
  EXPECT_TRUE(
      testing::contains(testing::captureError([&] {
                          graph.apply(ir::OpKind::ReduceProduct, {narrow}, {{"dim", int64_t{0}}});
                        }).what(),
                        "reduce_product multiplies float or int64 tensors"));
  EXPECT_TRUE(testing::contains(
      testing::captureError([&] {
        graph.apply(ir::OpKind::ReduceProductGrad, {x, x, y}, {{"dim", int64_t{0}}});
      }).what(),
      "input 0 (grad_output) must have shape [1,3]"));
}

} // namespace
// The cost model prices each function by its operations per element.
TEST(BinaryFunctionsTest, EveryFunctionHasItsVectorArithmetic) {
  for (const ir::BinaryFunction& function : ir::binaryFunctions()) {
    ASSERT_NO_THROW(ir::binaryArithmetic(function.name)) << function.name;
    const ir::ElementwiseArithmetic& arithmetic = ir::binaryArithmetic(function.name);
    EXPECT_FALSE(arithmetic.value.empty()) << function.name;
    EXPECT_EQ(arithmetic.gradient[0].empty(), function.derivativeA == nullptr) << function.name;
    EXPECT_EQ(arithmetic.gradient[1].empty(), function.derivativeB == nullptr) << function.name;
  }
}

} // namespace popsim
