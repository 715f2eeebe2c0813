// The pointwise function table: every derivative agrees with a central
// difference of its value, at points inside each function's domain and away
// from its kinks, and the schema checks function names and parameter counts.

#include "ir/graph.h"
#include "ir/pointwise_functions.h"
#include "ir/vector_arithmetic.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace popsim {
namespace {

// Parameters to evaluate each function with, and points in its domain.
struct Sample {
  std::vector<double> params;
  std::vector<double> points;
};

// Functions without a derivative although not piecewise constant: PyTorch
// defines none (torch.special's orthogonal polynomials, and its Bessel
// functions other than i0 and i1), so neither does popsim.
const char* const kOrthogonalPolynomials[] = {
    "chebyshev_polynomial_t",         "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",         "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",           "hermite_polynomial_he",
    "laguerre_polynomial_l",          "legendre_polynomial_p"};
const char* const kBesselWithoutDerivative[] = {"bessel_j0",
                                                "bessel_j1",
                                                "bessel_y0",
                                                "bessel_y1",
                                                "modified_bessel_k0",
                                                "modified_bessel_k1",
                                                "scaled_modified_bessel_k0",
                                                "scaled_modified_bessel_k1",
                                                "spherical_bessel_j0",
                                                "airy_ai"};

template <size_t N> bool among(const char* const (&names)[N], const std::string& name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool withoutDerivative(const std::string& name) {
  return among(kOrthogonalPolynomials, name) || among(kBesselWithoutDerivative, name);
}

std::map<std::string, Sample> samples() {
  const std::vector<double> anywhere = {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6};
  const std::vector<double> unit = {-0.8, -0.3, 0.2, 0.7};
  const std::vector<double> positive = {0.3, 0.9, 1.7, 3.2};
  std::map<std::string, Sample> table;
  for (const char* name :
       {"expm1", "sin",         "cos",  "atan",     "sinh",  "cosh",      "asinh",
        "erf",   "erfc",        "neg",  "sign",     "angle", "floor",     "ceil",
        "round", "trunc",       "frac", "silu",     "mish",  "hardswish", "hardsigmoid",
        "selu",  "log_sigmoid", "gelu", "gelu_tanh"}) {
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
  table["nan_to_zero"] = {{}, anywhere};
  table["norm_root"] = {{1.0 / 3.0}, positive};
  // (Above its floor: below it, the gradient deliberately passes the floor.)
  table["root_of_floored"] = {{0.1}, positive};
  // Both sides of the reflection and of the shift past 10.
  table["lgamma"] = {{}, {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6, 12.5, 40.5}};
  table["digamma"] = {{}, {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6, 12.5, 40.5}};
  table["logit"] = {{-1.0}, {0.05, 0.3, 0.5, 0.8, 0.97}}; // without eps
  table["sinc"] = {{}, anywhere};
  table["ndtr"] = {{}, anywhere};
  table["entr"] = {{}, positive};
  // Both sides of erfcx's switch to its series at 26, and log_ndtr's at -1.
  table["erfcx"] = {{}, {-2.7, -0.4, 0.35, 2.6, 25.9, 26.1, 40.0}};
  table["log_ndtr"] = {{}, {-30.0, -2.7, -1.01, -0.99, 0.35, 2.6, 7.0}};
  table["ndtri"] = {{}, {1e-3, 0.2, 0.5, 0.7, 0.999}};
  // Both sides of zero (the reflection) and far out.
  table["polygamma"] = {{3.0}, {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6, 12.5, 40.5}};
  // Both sides of the switch from the power series to the asymptotic expansion.
  for (const char* name : {"i0", "i0e", "i1", "i1e"}) {
    table[name] = {{}, {-25.3, -2.7, -0.4, 0.35, 1.1, 12.5, 19.99, 20.01, 45.0}};
  }
  // frexp away from the powers of two, where its mantissa jumps.
  table["frexp_mantissa"] = {{}, {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6, 37.5}};
  table["frexp_exponent"] = {{}, {-2.7, -1.3, -0.4, 0.35, 1.1, 2.6}};
  for (const char* name : kOrthogonalPolynomials)
    table[name] = {{5.0}, {-1.0, -0.8, -0.3, 0.0, 0.2, 0.7, 1.0, 1.6}};
  for (const char* name : kBesselWithoutDerivative)
    table[name] = {{}, {0.3, 1.7, 4.5, 16.9, 17.1, 19.9, 20.1, 33.0}};
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
    if (withoutDerivative(name)) {
      EXPECT_EQ(function.derivative, nullptr) << name;
      continue;
    }
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

const ir::PointwiseFunction& functionNamed(std::string_view name) {
  for (const ir::PointwiseFunction& function : ir::pointwiseFunctions()) {
    if (function.name == name) return function;
  }
  throw std::runtime_error("no pointwise function " + std::string(name));
}

// digamma and its derivative at points where they are known in closed form
// (Euler's constant gamma, psi(1/2) = -gamma - 2 ln 2, psi'(1) = pi^2 / 6,
// psi'(1/2) = pi^2 / 2), and PyTorch's values at the poles.
TEST(PointwiseFunctionsTest, DigammaHasItsKnownValues) {
  const ir::PointwiseFunction& digamma = functionNamed("digamma");
  const double gamma = 0.57721566490153286061;
  const double pi = 3.14159265358979323846;
  const double* none = nullptr;
  EXPECT_NEAR(digamma.value(1.0, none), -gamma, 1e-15);
  EXPECT_NEAR(digamma.value(0.5, none), -gamma - 2.0 * std::log(2.0), 1e-14);
  EXPECT_NEAR(digamma.value(-0.5, none), -gamma - 2.0 * std::log(2.0) + 2.0, 1e-13);
  EXPECT_NEAR(digamma.value(1e6, none), std::log(1e6) - 0.5e-6, 1e-12);
  EXPECT_NEAR(digamma.derivative(1.0, none), pi * pi / 6.0, 1e-14);
  EXPECT_NEAR(digamma.derivative(0.5, none), pi * pi / 2.0, 1e-13);
  EXPECT_EQ(digamma.value(0.0, none), -INFINITY);
  EXPECT_EQ(digamma.value(-0.0, none), INFINITY);
  EXPECT_TRUE(std::isnan(digamma.value(-3.0, none)));
  EXPECT_TRUE(std::isnan(digamma.value(-INFINITY, none)));
  EXPECT_EQ(digamma.value(INFINITY, none), INFINITY);
}

// The Bessel functions at points known to 30 digits (mpmath), on both sides
// of the switch at |x| = 20, and PyTorch's values at 0 and the infinities.
TEST(PointwiseFunctionsTest, BesselFunctionsAtKnownPoints) {
  const double* none = nullptr;
  const ir::PointwiseFunction& i0 = functionNamed("i0");
  const ir::PointwiseFunction& i0e = functionNamed("i0e");
  const ir::PointwiseFunction& i1 = functionNamed("i1");
  const ir::PointwiseFunction& i1e = functionNamed("i1e");
  const auto near = [](double actual, double expected) {
    EXPECT_NEAR(actual, expected, 4e-15 * std::fabs(expected));
  };
  near(i0.value(1.0, none), 1.26606587775200833560);
  near(i1.value(1.0, none), 0.56515910399248502721);
  near(i0.value(19.5, none), 26760525.3398387660275);
  near(i1.value(-3.25, none), -4.95254616590854802362);
  near(i0e.value(25.0, none), 0.0801967735474367084224);
  near(i1e.value(-50.0, none), -0.0559931238928953996439);
  EXPECT_EQ(i0.value(0.0, none), 1.0);
  EXPECT_EQ(i1.value(0.0, none), 0.0);
  EXPECT_EQ(i1.derivative(0.0, none), 0.5);
  EXPECT_EQ(i1e.derivative(0.0, none), 0.5);
  EXPECT_EQ(i0e.derivative(0.0, none), 0.0);
  // exp(|x|) / sqrt(|x|) at the infinities is inf / inf, NaN as in PyTorch;
  // the scaled functions go to zero.
  EXPECT_TRUE(std::isnan(i0.value(INFINITY, none)));
  EXPECT_TRUE(std::isnan(i1.value(-INFINITY, none)));
  EXPECT_EQ(i0e.value(-INFINITY, none), 0.0);
  EXPECT_EQ(i1e.value(-INFINITY, none), 0.0);
  EXPECT_TRUE(std::signbit(i1e.value(-INFINITY, none)));
}

// polygamma at points known to 30 digits (mpmath), of orders 1 to 5, above
// zero and through the reflection below it, and PyTorch's values at the poles
// and the infinities.
TEST(PointwiseFunctionsTest, PolygammaAtKnownPoints) {
  const ir::PointwiseFunction& polygamma = functionNamed("polygamma");
  const auto at = [&](double n, double x) { return polygamma.value(x, &n); };
  const auto near = [](double actual, double expected) {
    EXPECT_NEAR(actual, expected, 1e-13 * std::fabs(expected));
  };
  near(at(1, 1.0), 1.64493406684822643647);
  near(at(2, 1.0), -2.40411380631918857080);
  near(at(3, 1.0), 6.49393940226682914910);
  near(at(2, 0.5), -16.8287966442343199956);
  near(at(2, -0.5), -0.828796644234319995596);
  near(at(3, -2.25), 1558.45502318871434004);
  near(at(5, 7.5), 0.00139270765600430985580);
  near(at(2, 30.0), -0.00114876520372859984401);
  EXPECT_NEAR(at(4, -0.999), -23999999999999894.06, 1e-9 * 2.4e16);
  EXPECT_EQ(at(2, 0.0), -INFINITY);
  EXPECT_EQ(at(3, -2.0), INFINITY);
  EXPECT_EQ(at(2, -INFINITY), -INFINITY);
  EXPECT_TRUE(std::isnan(at(2, INFINITY)));
  EXPECT_TRUE(std::isnan(at(3, NAN)));
}

// The Bessel functions and Airy's Ai at points known to 30 digits (mpmath), in
// the series, integral and Hankel ranges, and PyTorch's values at the ends.
TEST(PointwiseFunctionsTest, BesselFunctionsOfBothKindsAtKnownPoints) {
  const double* none = nullptr;
  const auto value = [&](std::string_view name, double x) {
    return functionNamed(name).value(x, none);
  };
  const auto near = [](double actual, double expected, double tolerance) {
    EXPECT_NEAR(actual, expected, tolerance * std::fabs(expected)) << expected;
  };
  near(value("bessel_j0", 2.5), -0.0483837764681979963273, 1e-13);
  near(value("bessel_j0", 35.0), -0.126845682756312569807, 1e-13);
  near(value("bessel_j1", -7.0), 0.00468282348234583269911, 1e-11);
  near(value("bessel_j1", 50.0), -0.0975118281251751376615, 1e-13);
  near(value("bessel_y0", 0.5), -0.444518733506706557148, 1e-13);
  near(value("bessel_y0", 19.5), -0.0254517429761544671143, 1e-12);
  near(value("bessel_y0", 15.0), 0.205464296038918264792, 1e-9);
  near(value("bessel_y1", 3.0), 0.324674424791799978437, 1e-13);
  near(value("bessel_y1", 100.0), -0.0203723120027597933047, 1e-12);
  near(value("modified_bessel_k0", 1.0), 0.421024438240708333336, 1e-14);
  near(value("modified_bessel_k0", 7.5), 0.000249177616356114389015, 1e-12);
  near(value("modified_bessel_k1", 0.3), 3.05599203345732510718, 1e-13);
  near(value("modified_bessel_k1", 12.0), 2.29075746476718781592e-06, 1e-12);
  near(value("scaled_modified_bessel_k0", 40.0), 0.197555584957298168825, 1e-13);
  near(value("scaled_modified_bessel_k1", 5.0), 0.600273858788312582936, 1e-13);
  near(value("spherical_bessel_j0", 3.0), std::sin(3.0) / 3.0, 1e-15);
  EXPECT_EQ(value("spherical_bessel_j0", 0.0), 1.0);
  EXPECT_EQ(value("spherical_bessel_j0", INFINITY), 0.0);
  EXPECT_EQ(value("bessel_j0", 0.0), 1.0);
  EXPECT_TRUE(std::isnan(value("bessel_j1", INFINITY)));
  EXPECT_EQ(value("bessel_y0", 0.0), -INFINITY);
  EXPECT_TRUE(std::isnan(value("bessel_y1", -2.0)));
  EXPECT_EQ(value("modified_bessel_k1", 0.0), INFINITY);
  EXPECT_EQ(value("modified_bessel_k0", INFINITY), 0.0);
  EXPECT_TRUE(std::isnan(value("scaled_modified_bessel_k0", -1.0)));
  // Airy's Ai in its three forms, and NaN at the infinities as PyTorch's.
  near(value("airy_ai", -20.0), -0.17640612707798468959, 1e-12);
  near(value("airy_ai", -8.5), -0.330290237630208879022, 1e-12);
  near(value("airy_ai", -3.7), -0.282013061841931398227, 1e-13);
  near(value("airy_ai", -0.5), 0.475728091610539588799, 1e-14);
  near(value("airy_ai", 0.0), 0.35502805388781723926, 1e-15);
  near(value("airy_ai", 1.3), 0.0934746657715027045233, 1e-14);
  near(value("airy_ai", 2.5), 0.0157259233804704899953, 1e-13);
  near(value("airy_ai", 7.0), 7.49212886399716708077e-7, 1e-13);
  near(value("airy_ai", 30.0), 3.20821759155049557108e-49, 1e-13);
  EXPECT_TRUE(std::isnan(value("airy_ai", INFINITY)));
  EXPECT_TRUE(std::isnan(value("airy_ai", -INFINITY)));
}

// frexp on both sides of powers of two, at float's extremes and its special values.
TEST(PointwiseFunctionsTest, FrexpSplitsIntoMantissaAndExponent) {
  const double* none = nullptr;
  const ir::PointwiseFunction& mantissa = functionNamed("frexp_mantissa");
  const ir::PointwiseFunction& exponent = functionNamed("frexp_exponent");
  for (double x : {1.0, 0.5, 0.75, -3.0, 1024.0, 1023.999999, 0.1, 1.4e-45, 3.4e38, -7e-39}) {
    int e = 0;
    const double m = std::frexp(x, &e);
    EXPECT_EQ(mantissa.value(x, none), m) << x;
    EXPECT_EQ(exponent.value(x, none), e) << x;
  }
  EXPECT_EQ(exponent.value(0.0, none), 0.0);
  EXPECT_EQ(exponent.value(INFINITY, none), 0.0);
  EXPECT_EQ(exponent.value(NAN, none), 0.0);
  EXPECT_EQ(mantissa.value(-INFINITY, none), -INFINITY);
  EXPECT_TRUE(std::isnan(mantissa.value(NAN, none)));
  EXPECT_TRUE(std::signbit(mantissa.value(-0.0, none)));
  EXPECT_EQ(mantissa.derivative(3.4e38, none), 0.0); // 1 / 2^128, which overflows float
  EXPECT_EQ(mantissa.derivative(0.375, none), 2.0);
}

// The orthogonal polynomials against their closed forms (T_n(cos t) = cos nt,
// U_n(cos t) = sin (n+1)t / sin t, and explicit low degrees), their values at
// the ends of [-1, 1], and PyTorch's special cases (0 for n < 0, 1 for n = 0
// even at NaN, Laguerre's 1 at x = 0).
TEST(PointwiseFunctionsTest, OrthogonalPolynomialsAtKnownPoints) {
  const auto at = [](std::string_view name, double n, double x) {
    return functionNamed(name).value(x, &n);
  };
  const double t = 0.7, c = std::cos(t);
  EXPECT_NEAR(at("chebyshev_polynomial_t", 9, c), std::cos(9 * t), 1e-13);
  EXPECT_NEAR(at("chebyshev_polynomial_u", 7, c), std::sin(8 * t) / std::sin(t), 1e-13);
  // V_n(cos t) = cos((n + 1/2) t) / cos(t / 2), W_n(cos t) = sin((n + 1/2) t) / sin(t / 2).
  EXPECT_NEAR(at("chebyshev_polynomial_v", 6, c), std::cos(6.5 * t) / std::cos(t / 2), 1e-13);
  EXPECT_NEAR(at("chebyshev_polynomial_w", 6, c), std::sin(6.5 * t) / std::sin(t / 2), 1e-13);
  EXPECT_NEAR(at("shifted_chebyshev_polynomial_t", 9, (c + 1) / 2), std::cos(9 * t), 1e-13);
  EXPECT_NEAR(at("hermite_polynomial_h", 4, 1.5), 16 * 5.0625 - 48 * 2.25 + 12, 1e-12);
  EXPECT_NEAR(at("hermite_polynomial_he", 4, 1.5), 5.0625 - 6 * 2.25 + 3, 1e-12);
  EXPECT_NEAR(at("laguerre_polynomial_l", 3, 2.0), (-8 + 9 * 4 - 18 * 2 + 6) / 6.0, 1e-13);
  EXPECT_NEAR(at("legendre_polynomial_p", 3, 0.4), (5 * 0.064 - 3 * 0.4) / 2, 1e-14);
  EXPECT_EQ(at("chebyshev_polynomial_u", 5, -1.0), -6.0);
  EXPECT_EQ(at("chebyshev_polynomial_v", 5, -1.0), -11.0);
  EXPECT_EQ(at("chebyshev_polynomial_w", 5, 1.0), 11.0);
  EXPECT_EQ(at("shifted_chebyshev_polynomial_w", 4, 0.0), 1.0);
  EXPECT_EQ(at("legendre_polynomial_p", 7, -1.0), -1.0);
  EXPECT_EQ(at("chebyshev_polynomial_t", -1, 0.3), 0.0);
  EXPECT_EQ(at("hermite_polynomial_h", 0, NAN), 1.0);
  EXPECT_EQ(at("laguerre_polynomial_l", 6, 0.0), 1.0);
  EXPECT_TRUE(std::isnan(at("legendre_polynomial_p", 2, NAN)));
}

// torch.special's normal-distribution and entropy functions at points known to
// 30 digits (mpmath; ndtri by root-finding on its ncdf), in both branches of each, and PyTorch's
// values at the ends of their domains.
TEST(PointwiseFunctionsTest, SpecialFunctionsAtKnownPoints) {
  const double* none = nullptr;
  const auto value = [&](std::string_view name, double x) {
    return functionNamed(name).value(x, none);
  };
  const auto near = [](double actual, double expected) {
    EXPECT_NEAR(actual, expected, 1e-12 * std::fabs(expected));
  };
  near(value("erfcx", -2.7), 2930.94452028063976516);
  near(value("erfcx", 0.35), 0.701496331119589133455);
  near(value("erfcx", 25.9), 0.0217671811507386270644);
  near(value("erfcx", 30.0), 0.0187958888614167514971);
  near(value("erfcx", 1e4), 0.0000564189580726808411524);
  near(value("log_ndtr", -30.0), -454.321243956343197107);
  near(value("log_ndtr", -0.5), -1.17591176159361860888);
  near(value("log_ndtr", 3.0), -0.00135080996474819379884);
  near(value("ndtri", 1e-30), -11.4640246884433881432);
  near(value("ndtri", 0.975), 1.95996398454005423552);
  near(value("ndtri", 0.3), -0.524400512708040784038);
  near(value("entr", 2.5), -2.29072682968538766296);
  EXPECT_EQ(value("erfcx", INFINITY), 0.0);
  EXPECT_EQ(value("erfcx", -INFINITY), INFINITY);
  EXPECT_EQ(value("ndtri", 0.0), -INFINITY);
  EXPECT_EQ(value("ndtri", 1.0), INFINITY);
  EXPECT_TRUE(std::isnan(value("ndtri", 1.5)));
  EXPECT_EQ(value("entr", 0.0), 0.0);
  EXPECT_EQ(value("entr", -1.0), -INFINITY);
  EXPECT_TRUE(std::isnan(value("entr", NAN)));
}

TEST(PointwiseFunctionsTest, SchemaNamesTheFunctionAndItsParameters) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", testing::f32({3}));
  EXPECT_EQ(testing::captureError([&] {
              graph.apply(
                  ir::OpKind::Pointwise, {x},
                  {{"function", std::string("bessel_i0")}, {"params", std::vector<double>{}}});
            }).kind(),
            ErrorKind::Compilation);
  const CoreError error = testing::captureError([&] {
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
// The cost model prices each function by its operations per element: every
// function has them, and a function with a derivative has a gradient's.
TEST(PointwiseFunctionsTest, EveryFunctionHasItsVectorArithmetic) {
  for (const ir::PointwiseFunction& function : ir::pointwiseFunctions()) {
    ASSERT_NO_THROW(ir::pointwiseArithmetic(function.name)) << function.name;
    const ir::ElementwiseArithmetic& arithmetic = ir::pointwiseArithmetic(function.name);
    EXPECT_FALSE(arithmetic.value.empty()) << function.name;
    EXPECT_EQ(arithmetic.gradient[0].empty(), function.derivative == nullptr) << function.name;
  }
  const CoreError error =
      testing::captureError([] { ir::pointwiseArithmetic("no_such_function"); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "pointwise function 'no_such_function'"));
}

} // namespace popsim
