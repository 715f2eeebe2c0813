#include "ir/pointwise_functions.h"

#include <cmath>
#include <limits>

namespace popsim::ir {
namespace {

constexpr double kPi = 3.14159265358979323846;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// softplus with PyTorch's threshold: linear once beta * x exceeds it.
double softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}

// The inverse of erf: a first guess refined by Newton's method on erf.
double erfinv(double y) {
  if (y <= -1.0) return y == -1.0 ? -std::numeric_limits<double>::infinity() : std::nan("");
  if (y >= 1.0) return y == 1.0 ? std::numeric_limits<double>::infinity() : std::nan("");
  const double a = 0.147;
  const double l = std::log(1.0 - y * y);
  const double t = 2.0 / (kPi * a) + l / 2.0;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - l / a) - t), y);
  for (int i = 0; i < 4; ++i) {
    x -= (std::erf(x) - y) / (2.0 / std::sqrt(kPi) * std::exp(-x * x));
  }
  return x;
}

// PyTorch's sign: (0 < x) - (x < 0), so NaN gives 0.
double sign(double x) { return (0.0 < x ? 1.0 : 0.0) - (x < 0.0 ? 1.0 : 0.0); }

// x ** exponent as PyTorch computes it: the exponents it special-cases go
// through multiplications, sqrt and reciprocals (which decide what negative
// and infinite x give), the others through pow.
double power(double x, double exponent) {
  if (exponent == 2.0) return x * x;
  if (exponent == 3.0) return x * x * x;
  if (exponent == 0.5) return std::sqrt(x);
  if (exponent == -0.5) return 1.0 / std::sqrt(x);
  if (exponent == -1.0) return 1.0 / x;
  if (exponent == -2.0) return 1.0 / (x * x);
  return std::pow(x, exponent);
}

// min(max(x, low), high) with NaN staying NaN, as in PyTorch's kernels.
double bounded(double x, double low, double high) {
  return std::isnan(x) ? x : std::fmin(std::fmax(x, low), high);
}

// ELU and its relatives with PyTorch's branches: x <= 0 takes the
// exponential side, so NaN takes the linear one in the gradient.
double elu(double x, double alpha, double scale, double inputScale) {
  return x <= 0 ? scale * alpha * std::expm1(x * inputScale) : scale * x;
}
double eluDerivative(double x, double alpha, double scale, double inputScale) {
  return x <= 0 ? scale * alpha * inputScale * std::exp(x * inputScale) : scale;
}

// SELU's constants (Klambauer et al.), as PyTorch defines them.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

using P = const double*;

// Derivatives follow PyTorch's backward formulas where they decide what NaN
// and the kinks give (hardtanh passes the gradient of NaN, clamp does not).
// clang-format off
std::vector<PointwiseFunction> makeTable() {
  return {
    {"reciprocal", {}, [](double x, P) { return 1.0 / x; }, [](double x, P) { return -1.0 / (x * x); }},
    {"rsqrt", {}, [](double x, P) { return 1.0 / std::sqrt(x); }, [](double x, P) { return -0.5 / (x * std::sqrt(x)); }},
    {"expm1", {}, [](double x, P) { return std::expm1(x); }, [](double x, P) { return std::exp(x); }},
    {"log1p", {}, [](double x, P) { return std::log1p(x); }, [](double x, P) { return 1.0 / (1.0 + x); }},
    {"log2", {}, [](double x, P) { return std::log2(x); }, [](double x, P) { return 1.0 / (x * std::log(2.0)); }},
    {"log10", {}, [](double x, P) { return std::log10(x); }, [](double x, P) { return 1.0 / (x * std::log(10.0)); }},
    {"sin", {}, [](double x, P) { return std::sin(x); }, [](double x, P) { return std::cos(x); }},
    {"cos", {}, [](double x, P) { return std::cos(x); }, [](double x, P) { return -std::sin(x); }},
    {"tan", {}, [](double x, P) { return std::tan(x); }, [](double x, P) { return 1.0 + std::tan(x) * std::tan(x); }},
    {"asin", {}, [](double x, P) { return std::asin(x); }, [](double x, P) { return 1.0 / std::sqrt(1.0 - x * x); }},
    {"acos", {}, [](double x, P) { return std::acos(x); }, [](double x, P) { return -1.0 / std::sqrt(1.0 - x * x); }},
    {"atan", {}, [](double x, P) { return std::atan(x); }, [](double x, P) { return 1.0 / (1.0 + x * x); }},
    {"sinh", {}, [](double x, P) { return std::sinh(x); }, [](double x, P) { return std::cosh(x); }},
    {"cosh", {}, [](double x, P) { return std::cosh(x); }, [](double x, P) { return std::sinh(x); }},
    {"asinh", {}, [](double x, P) { return std::asinh(x); }, [](double x, P) { return 1.0 / std::sqrt(x * x + 1.0); }},
    {"acosh", {}, [](double x, P) { return std::acosh(x); }, [](double x, P) { return 1.0 / std::sqrt(x * x - 1.0); }},
    {"atanh", {}, [](double x, P) { return std::atanh(x); }, [](double x, P) { return 1.0 / (1.0 - x * x); }},
    {"erf", {}, [](double x, P) { return std::erf(x); }, [](double x, P) { return 2.0 / std::sqrt(kPi) * std::exp(-x * x); }},
    {"erfc", {}, [](double x, P) { return std::erfc(x); }, [](double x, P) { return -2.0 / std::sqrt(kPi) * std::exp(-x * x); }},
    {"erfinv", {}, [](double x, P) { return erfinv(x); },
     [](double x, P) { const double y = erfinv(x); return std::sqrt(kPi) / 2.0 * std::exp(y * y); }},
    {"sign", {}, [](double x, P) { return sign(x); }, nullptr},
    {"floor", {}, [](double x, P) { return std::floor(x); }, nullptr},
    {"ceil", {}, [](double x, P) { return std::ceil(x); }, nullptr},
    {"round", {}, [](double x, P) { return std::nearbyint(x); }, nullptr}, // half to even
    {"trunc", {}, [](double x, P) { return std::trunc(x); }, nullptr},
    {"frac", {}, [](double x, P) { return x - std::trunc(x); }, [](double, P) { return 1.0; }},
    // x ** exponent and base ** x.
    {"pow", {"exponent"}, [](double x, P p) { return power(x, p[0]); },
     [](double x, P p) { return p[0] == 0.0 ? 0.0 : p[0] * power(x, p[0] - 1.0); }},
    {"rpow", {"base"}, [](double x, P p) { return std::pow(p[0], x); },
     [](double x, P p) { return std::pow(p[0], x) * std::log(p[0]); }},
    // Bounds: clamp's gradient includes them, hardtanh's excludes them.
    {"clamp", {"min", "max"}, [](double x, P p) { return bounded(x, p[0], p[1]); },
     [](double x, P p) { return x >= p[0] && x <= p[1] ? 1.0 : 0.0; }},
    {"hardtanh", {"min", "max"}, [](double x, P p) { return bounded(x, p[0], p[1]); },
     [](double x, P p) { return x <= p[0] || x >= p[1] ? 0.0 : 1.0; }},
    // Activations.
    {"silu", {}, [](double x, P) { return x * sigmoid(x); },
     [](double x, P) { const double s = sigmoid(x); return s * (1.0 + x * (1.0 - s)); }},
    {"mish", {}, [](double x, P) { return x * std::tanh(softplus(x, 1.0, 20.0)); },
     [](double x, P) { const double t = std::tanh(softplus(x, 1.0, 20.0)); return t + x * sigmoid(x) * (1.0 - t * t); }},
    {"hardswish", {}, [](double x, P) { return x * bounded(x + 3.0, 0.0, 6.0) / 6.0; },
     [](double x, P) { return x < -3.0 ? 0.0 : (x <= 3.0 ? x / 3.0 + 0.5 : 1.0); }},
    {"hardsigmoid", {}, [](double x, P) { return bounded(x + 3.0, 0.0, 6.0) / 6.0; },
     [](double x, P) { return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0; }},
    {"elu", {"alpha", "scale", "input_scale"}, [](double x, P p) { return elu(x, p[0], p[1], p[2]); },
     [](double x, P p) { return eluDerivative(x, p[0], p[1], p[2]); }},
    {"selu", {}, [](double x, P) { return elu(x, kSeluAlpha, kSeluScale, 1.0); },
     [](double x, P) { return eluDerivative(x, kSeluAlpha, kSeluScale, 1.0); }},
    {"celu", {"alpha"}, [](double x, P p) { return elu(x, p[0], 1.0, 1.0 / p[0]); },
     [](double x, P p) { return eluDerivative(x, p[0], 1.0, 1.0 / p[0]); }},
    {"leaky_relu", {"negative_slope"}, [](double x, P p) { return x > 0 ? x : x * p[0]; },
     [](double x, P p) { return x > 0 ? 1.0 : p[0]; }},
    {"softplus", {"beta", "threshold"}, [](double x, P p) { return softplus(x, p[0], p[1]); },
     [](double x, P p) { return x * p[0] > p[1] ? 1.0 : sigmoid(p[0] * x); }},
    {"log_sigmoid", {}, [](double x, P) { return std::fmin(x, 0.0) - std::log1p(std::exp(-std::fabs(x))); },
     [](double x, P) { return 1.0 - sigmoid(x); }},
    {"hardshrink", {"lambda"}, [](double x, P p) { return x >= -p[0] && x <= p[0] ? 0.0 : x; },
     [](double x, P p) { return x >= -p[0] && x <= p[0] ? 0.0 : 1.0; }},
    {"softshrink", {"lambda"}, [](double x, P p) { return x > p[0] ? x - p[0] : (x < -p[0] ? x + p[0] : 0.0); },
     [](double x, P p) { return x >= -p[0] && x <= p[0] ? 0.0 : 1.0; }},
    {"threshold", {"threshold", "value"}, [](double x, P p) { return x <= p[0] ? p[1] : x; },
     [](double x, P p) { return x <= p[0] ? 0.0 : 1.0; }},
    // The root of a p-norm, sum ** (1 / p): its gradient is zero where the sum
    // is (a zero vector), as PyTorch's norm backward masks it.
    {"norm_root", {"exponent"}, [](double x, P p) { return power(x, p[0]); },
     [](double x, P p) { return x == 0.0 ? 0.0 : p[0] * power(x, p[0] - 1.0); }},
    // |x| whose gradient at NaN is NaN (abs's is 0, as PyTorch's scalar loop
    // has it): cdist's gradient for p = 1 (sign(diff) in PyTorch's kernel).
    {"magnitude", {}, [](double x, P) { return std::fabs(x); },
     [](double x, P) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : x)); }},
    // |x| ** exponent for the p-norms with p < 1: the gradient at 0 is 0, as
    // PyTorch's norm backward masks it (pow's would be infinite there).
    {"magnitude_pow", {"exponent"}, [](double x, P p) { return power(std::fabs(x), p[0]); },
     [](double x, P p) { return x == 0.0 ? 0.0 : (x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x)) * p[0] * power(std::fabs(x), p[0] - 1.0); }},
    // The root of a sum of squares floored at `min`, whose gradient is the
    // root's at the floored value: PyTorch's cosine_similarity floors the sum
    // in place outside autograd, so its gradient passes the floor.
    {"root_of_floored", {"min"}, [](double x, P p) { return std::sqrt(std::isnan(x) ? x : std::fmax(x, p[0])); },
     [](double x, P p) { return 0.5 / std::sqrt(std::isnan(x) ? x : std::fmax(x, p[0])); }},
    // Replacements for NaN and the infinities; the gradient passes finite values only.
    {"nan_to_num", {"nan", "posinf", "neginf"},
     [](double x, P p) { return std::isnan(x) ? p[0] : (std::isinf(x) ? (x > 0 ? p[1] : p[2]) : x); },
     [](double x, P) { return std::isfinite(x) ? 1.0 : 0.0; }},
  };
}
// clang-format on

} // namespace

const std::vector<PointwiseFunction>& pointwiseFunctions() {
  static const std::vector<PointwiseFunction> table = makeTable();
  return table;
}

const PointwiseFunction* findPointwiseFunction(std::string_view name) {
  for (const PointwiseFunction& function : pointwiseFunctions()) {
    if (function.name == name) return &function;
  }
  return nullptr;
}

} // namespace popsim::ir
