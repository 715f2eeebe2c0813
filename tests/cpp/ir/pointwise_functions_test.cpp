// The pointwise function table: every derivative agrees with a central
// difference of its value, at points inside each function's domain and away
// from its kinks, and the schema checks function names and parameter counts.

#include "ir/graph.h"
#include "ir/pointwise_functions.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace popsim {
namespace {

// Parameters to evaluate each function with, and points in its domain.
struct Sample {
  std::vector<double> params;
  std::vector<double> points;
};

std::map<std::string, Sample> samples() {
  const std::vector<double> anywhere = {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6};
  const std::vector<double> unit = {-0.8, -0.3, 0.2, 0.7};
  const std::vector<double> positive = {0.3, 0.9, 1.7, 3.2};
  std::map<std::string, Sample> table;
  for (const char* name :
       {"expm1", "sin",       "cos",         "atan", "sinh",        "cosh",  "asinh",    "erf",
        "erfc",  "sign",      "floor",       "ceil", "round",       "trunc", "frac",     "silu",
        "mish",  "hardswish", "hardsigmoid", "selu", "log_sigmoid", "gelu",  "gelu_tanh"}) {
    table[name] = {{}, anywhere};
  }
  for (const char* name : {"asin", "acos", "atanh", "erfinv"}) {
    table[name] = {{}, unit};
  }
  for (const char* name : {"reciprocal", "rsqrt", "log", "log1p", "log2", "log10"}) {
    table[name] = {{}, positive};
  }
  table["tan"] = {{}, unit};
  table["magnitude"] = {{}, anywhere};
  table["magnitude_pow"] = {{0.5}, anywhere};
  table["acosh"] = {{}, {1.2, 1.9, 3.3}};
  table["pow"] = {{2.5}, positive};
  table["rpow"] = {{1.7}, anywhere};
  table["clamp"] = {{-1.0, 1.5}, anywhere};
  table["hardtanh"] = {{-1.0, 1.5}, anywhere};
  table["elu"] = {{0.7, 1.2, 0.9}, anywhere};
  table["celu"] = {{1.3}, anywhere};
  table["leaky_relu"] = {{0.2}, anywhere};
  table["softplus"] = {{2.0, 3.0}, anywhere};
  table["hardshrink"] = {{0.5}, anywhere};
  table["softshrink"] = {{0.5}, anywhere};
  table["threshold"] = {{0.2, -1.0}, anywhere};
  table["nan_to_num"] = {{0.0, 9.0, -9.0}, anywhere};
  table["norm_root"] = {{1.0 / 3.0}, positive};
  // (Above its floor: below it, the gradient deliberately passes the floor.)
  table["root_of_floored"] = {{0.1}, positive};
  return table;
}

TEST(PointwiseFunctionsTest, DerivativesMatchCentralDifferences) {
  const std::map<std::string, Sample> table = samples();
  for (const ir::PointwiseFunction& function : ir::pointwiseFunctions()) {
    const std::string name(function.name);
    auto sample = table.find(name);
    ASSERT_NE(sample, table.end()) << name << " has no sample points in this test";
    ASSERT_EQ(sample->second.params.size(), function.parameters.size()) << name;
    const double* params = sample->second.params.data();
    for (double x : sample->second.points) {
      const double h = 1e-6;
      const double numeric =
          (function.value(x + h, params) - function.value(x - h, params)) / (2 * h);
      const double analytic = function.derivative != nullptr ? function.derivative(x, params) : 0.0;
      EXPECT_NEAR(analytic, numeric, 1e-5 * std::max(1.0, std::fabs(numeric)))
          << name << " at " << x;
    }
  }
}

TEST(PointwiseFunctionsTest, SchemaNamesTheFunctionAndItsParameters) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", testing::f32({3}));
  EXPECT_EQ(testing::captureError([&] {
              graph.apply(ir::OpKind::Pointwise, {x},
                          {{"function", std::string("sinc")}, {"params", std::vector<double>{}}});
            }).kind(),
            ErrorKind::Compilation);
  const Error error = testing::captureError([&] {
    graph.apply(ir::OpKind::Pointwise, {x},
                {{"function", std::string("hardtanh")}, {"params", std::vector<double>{1.0}}});
  });
  EXPECT_TRUE(testing::contains(error.what(), "hardtanh takes 2 parameter(s), got 1."));
  ir::Value* y =
      graph.apply(ir::OpKind::Pointwise, {x},
                  {{"function", std::string("leaky_relu")}, {"params", std::vector<double>{0.1}}});
  EXPECT_EQ(y->type(), testing::f32({3}));
}

} // namespace
} // namespace popsim
