#include "ir/vector_arithmetic.h"

#include "common/check.h"

#include <string>
#include <unordered_map>

namespace popsim::ir {
namespace {

constexpr VectorOp Plain = VectorOp::Plain;
constexpr VectorOp Compare = VectorOp::Compare;
constexpr VectorOp Divide = VectorOp::Divide;
constexpr VectorOp Reciprocal = VectorOp::Reciprocal;
constexpr VectorOp Exp = VectorOp::Exp;
constexpr VectorOp Log = VectorOp::Log;
constexpr VectorOp Log1p = VectorOp::Log1p;
constexpr VectorOp Sqrt = VectorOp::Sqrt;
constexpr VectorOp Rsqrt = VectorOp::Rsqrt;
constexpr VectorOp Sigmoid = VectorOp::Sigmoid;
constexpr VectorOp Tanh = VectorOp::Tanh;
constexpr VectorOp Erf = VectorOp::Erf;
constexpr VectorOp SinCos = VectorOp::SinCos;
constexpr VectorOp Tan = VectorOp::Tan;
constexpr VectorOp Asin = VectorOp::Asin;
constexpr VectorOp Power = VectorOp::Power;
constexpr VectorOp Atan2 = VectorOp::Atan2;
constexpr VectorOp Remainder = VectorOp::Remainder;
constexpr VectorOp Round = VectorOp::Round;
constexpr VectorOp Sign = VectorOp::Sign;
constexpr VectorOp Gelu = VectorOp::Gelu;

// `ops` followed by `plain` plain operations.
VectorArithmetic with(VectorArithmetic ops, int plain) {
  ops.insert(ops.end(), static_cast<size_t>(plain), Plain);
  return ops;
}

using Table = std::unordered_map<std::string_view, ElementwiseArithmetic>;

// A unary function: its value, and its derivative times the incoming gradient.
void unary(Table& table, std::string_view name, VectorArithmetic value, VectorArithmetic gradient) {
  table[name] = {std::move(value), {std::move(gradient), {}}};
}

// The pointwise functions, each written as the operations its formula takes
// (pointwise_formulas.h); a gradient ends with the product by the incoming
// gradient (one plain operation).
Table makePointwiseTable() {
  Table t;
  unary(t, "reciprocal", {Reciprocal}, with({Reciprocal}, 2));
  unary(t, "rsqrt", {Rsqrt}, with({Rsqrt}, 3));
  unary(t, "expm1", with({Exp}, 1), with({Exp}, 1));
  unary(t, "log", {Log}, {Divide});
  unary(t, "log1p", {Log1p}, with({Divide}, 1));
  unary(t, "log2", with({Log}, 1), with({Divide}, 1));
  unary(t, "log10", with({Log}, 1), with({Divide}, 1));
  unary(t, "sin", {SinCos}, with({SinCos}, 1));
  unary(t, "cos", {SinCos}, with({SinCos}, 2));
  unary(t, "tan", {Tan}, with({Tan}, 3));
  unary(t, "asin", {Asin}, with({Rsqrt}, 3));
  unary(t, "acos", {Asin}, with({Rsqrt}, 4));
  unary(t, "atan", {Atan2}, with({Reciprocal}, 3));
  unary(t, "sinh", with({Exp, Reciprocal}, 2), with({Exp, Reciprocal}, 3));
  unary(t, "cosh", with({Exp, Reciprocal}, 2), with({Exp, Reciprocal}, 3));
  unary(t, "asinh", with({Sqrt, Log}, 3), with({Rsqrt}, 3));
  unary(t, "acosh", with({Sqrt, Log}, 3), with({Rsqrt}, 3));
  unary(t, "atanh", with({Divide, Log}, 3), with({Reciprocal}, 3));
  unary(t, "erf", {Erf}, with({Exp}, 4));
  unary(t, "erfc", with({Erf}, 1), with({Exp}, 4));
  // Inverse error function: a rational approximation in log(1 - x^2).
  unary(t, "erfinv", with({Log, Sqrt, Divide}, 10), with({Log, Sqrt, Divide, Exp}, 14));
  // lgamma, digamma, trigamma: a recurrence to x >= 6, then an asymptotic series.
  unary(t, "lgamma", with({Log, Log, Reciprocal, Divide, Divide}, 12),
        with({Log, Reciprocal, Divide, Divide, Divide}, 14));
  unary(t, "digamma", with({Log, Reciprocal, Divide, Divide, Divide}, 14),
        with({Reciprocal, Divide, Divide, Divide, Divide}, 16));
  // polygamma: the Hurwitz zeta's 10 + n + 3 powers for x > 0 and again for
  // the reflection, with its cotangent (counted at n = 2, its order a parameter).
  VectorArithmetic zetaPowers(30, Power);
  zetaPowers.insert(zetaPowers.end(), {Tan, Reciprocal});
  unary(t, "polygamma", with(zetaPowers, 60), with(zetaPowers, 61));
  unary(t, "entr", with({Compare, Compare, Log}, 2), with({Log}, 2));
  unary(t, "erfcx", with({Exp, Erf, Compare, Divide}, 12), with({Exp, Erf, Compare, Divide}, 15));
  unary(t, "log_ndtr", with({Exp, Erf, Log, Divide, Compare}, 14),
        with({Exp, Exp, Erf, Log, Divide, Compare}, 18));
  // ndtri: a rational guess, then four Newton steps on ndtr.
  unary(t, "ndtri",
        with({Log, Sqrt, Divide, Erf, Exp, Divide, Erf, Exp, Divide, Erf, Exp, Divide, Erf, Exp,
              Divide, Compare},
             20),
        with({Log, Sqrt, Divide, Erf, Exp, Divide, Erf, Exp, Divide, Erf, Exp, Divide, Erf, Exp,
              Divide, Compare, Exp},
             22));
  // Bessel functions: a series of 30 terms and the exponential's scale, as a
  // Chebyshev evaluation (Cephes) takes it; a derivative needs both orders.
  unary(t, "i0", with({Exp, Sqrt, Divide}, 60), with({Exp, Sqrt, Divide}, 61));
  unary(t, "i0e", with({Exp, Sqrt, Divide}, 60),
        with({Exp, Exp, Sqrt, Sqrt, Divide, Divide, Sign}, 123));
  unary(t, "i1", with({Exp, Sqrt, Divide}, 60),
        with({Exp, Exp, Sqrt, Sqrt, Divide, Divide, Divide}, 123));
  unary(t, "i1e", with({Exp, Sqrt, Divide}, 60),
        with({Exp, Exp, Sqrt, Sqrt, Divide, Divide, Divide, Sign}, 124));
  unary(t, "logit", with({Compare, Compare, Divide, Log}, 1),
        with({Compare, Compare, Reciprocal}, 3));
  unary(t, "sinc", with({SinCos, Divide}, 2), with({SinCos, SinCos, Divide, Divide}, 4));
  unary(t, "ndtr", with({Erf}, 3), with({Exp}, 4));
  unary(t, "neg", {Plain}, {Plain});
  unary(t, "sign", {Sign}, {});
  unary(t, "angle", {Compare, Compare}, {});
  // The other Bessel functions evaluate their series and their Hankel sums
  // (with the cosine and sine of the phase, or K's trapezoidal sum of 40
  // exponentials) and select by range.
  VectorArithmetic hankel = with({Sqrt, Divide, SinCos, SinCos, Compare, Compare}, 2 * 30);
  for (std::string_view name : {"bessel_j0", "bessel_j1"})
    unary(t, name, with(hankel, 3 * 45), {});
  hankel.push_back(Log);
  for (std::string_view name : {"bessel_y0", "bessel_y1"})
    unary(t, name, with(hankel, 3 * 45 + 3 * 45), {});
  VectorArithmetic trapezoid(41, Exp);
  trapezoid.insert(trapezoid.end(), {Log, Sqrt, Divide, Compare, Compare, Compare});
  for (std::string_view name : {"modified_bessel_k0", "modified_bessel_k1",
                                "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"})
    unary(t, name, with(trapezoid, 4 * 20 + 2 * 30 + 2 * 40), {});
  unary(t, "spherical_bessel_j0", with({SinCos, Divide, Compare, Compare}, 3), {});
  // frexp: the exponent's log2 and its correction, and the power of two.
  unary(t, "frexp_exponent", with({Log, Round, Power, Compare, Compare, Compare}, 3), {});
  unary(t, "frexp_mantissa", with({Log, Round, Power, Power, Compare, Compare, Compare}, 4),
        with({Log, Round, Power, Power, Divide, Compare, Compare, Compare}, 3));
  // Airy's Ai: two series of 60 terms, K_(1/3)'s trapezoidal sum and the Hankel sums.
  VectorArithmetic airy = trapezoid;
  airy.insert(airy.end(), {Power, Sqrt, Sqrt, Exp, SinCos, SinCos, SinCos, SinCos});
  unary(t, "airy_ai", with(airy, 4 * 60 + 2 * 30 + 2 * 40), {});
  // The orthogonal polynomials: a three-term recurrence, counted at degree 8
  // (the degree is a parameter), and the selects of the special values.
  for (std::string_view name :
       {"chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he"}) {
    unary(t, name, with({Compare, Compare}, 3 * 8), {});
  }
  // Laguerre's and Legendre's recurrences also divide by k + 1 at each degree.
  VectorArithmetic dividingRecurrence(8, Divide);
  dividingRecurrence.insert(dividingRecurrence.end(), {Compare, Compare});
  for (std::string_view name : {"laguerre_polynomial_l", "legendre_polynomial_p"})
    unary(t, name, with(dividingRecurrence, 4 * 8), {});
  unary(t, "floor", {Round}, {});
  unary(t, "ceil", {Round}, {});
  unary(t, "round", {Round}, {});
  unary(t, "trunc", {Round}, {});
  unary(t, "frac", with({Round}, 1), {Plain});
  unary(t, "pow", {Power}, with({Power}, 2));
  unary(t, "rpow", with({Exp}, 1), with({Exp}, 2));
  unary(t, "clamp", {Compare, Compare}, with({Compare, Compare}, 1));
  unary(t, "hardtanh", {Compare, Compare}, with({Compare, Compare}, 1));
  unary(t, "silu", with({Sigmoid}, 1), with({Sigmoid}, 5));
  unary(t, "gelu", {Gelu}, with({Tanh}, 14));
  unary(t, "gelu_tanh", {Gelu}, with({Tanh}, 14));
  unary(t, "mish", with({Exp, Log1p, Tanh}, 1), with({Exp, Log1p, Tanh, Sigmoid}, 5));
  unary(t, "hardswish", with({Compare, Compare}, 3), with({Compare, Compare}, 3));
  unary(t, "hardsigmoid", with({Compare, Compare}, 2), with({Compare, Compare}, 1));
  unary(t, "elu", with({Exp, Compare}, 3), with({Exp, Compare}, 3));
  unary(t, "selu", with({Exp, Compare}, 3), with({Exp, Compare}, 3));
  unary(t, "celu", with({Exp, Compare}, 3), with({Exp, Compare}, 3));
  unary(t, "leaky_relu", with({Compare}, 1), with({Compare}, 1));
  unary(t, "softplus", with({Exp, Log1p, Compare}, 2), with({Sigmoid, Compare}, 2));
  unary(t, "log_sigmoid", with({Compare, Exp, Log1p}, 3), with({Sigmoid}, 2));
  unary(t, "hardshrink", {Compare, Compare}, with({Compare, Compare}, 1));
  unary(t, "softshrink", with({Compare, Compare}, 1), with({Compare, Compare}, 1));
  unary(t, "threshold", {Compare}, with({Compare}, 1));
  unary(t, "norm_root", {Power}, with({Power, Compare}, 2));
  unary(t, "magnitude", {Plain}, with({Sign}, 1));
  unary(t, "magnitude_pow", with({Power}, 1), with({Power, Sign, Compare}, 3));
  unary(t, "root_of_floored", {Compare, Sqrt}, with({Compare, Rsqrt}, 2));
  unary(t, "nan_to_num", {Compare, Compare, Compare}, with({Compare}, 1));
  unary(t, "nan_to_zero", {Compare}, with({Compare}, 1));
  return t;
}

// The binary functions (binary_formulas.h).
Table makeBinaryTable() {
  Table t;
  const auto binary = [&t](std::string_view name, VectorArithmetic value, VectorArithmetic a,
                           VectorArithmetic b) {
    t[name] = {std::move(value), {std::move(a), std::move(b)}};
  };
  binary("add", {Plain}, {Plain}, {Plain});
  binary("sub", {Plain}, {Plain}, {Plain});
  binary("mul", {Plain}, {Plain}, {Plain});
  for (std::string_view name : {"maximum", "minimum", "fmax", "fmin", "clamp_min", "clamp_max"}) {
    binary(name, {Compare}, with({Compare}, 1), with({Compare}, 1));
  }
  binary("prelu", with({Compare}, 1), with({Compare}, 1), with({Compare}, 1));
  binary("remainder", {Remainder}, {Plain}, with({Divide, Round}, 1));
  binary("fmod", {Remainder}, {Plain}, with({Divide, Round}, 1));
  binary("div_floor", {Divide, Round}, {}, {});
  binary("div_trunc", {Divide, Round}, {}, {});
  binary("atan2", {Atan2}, with({Divide}, 3), with({Divide}, 3));
  binary("logaddexp", with({Compare, Exp, Log1p}, 3), with({Exp, Divide}, 1),
         with({Exp, Divide}, 1));
  binary("xlogy", with({Compare, Compare, Log}, 1), with({Compare, Log}, 1), {Divide});
  binary("xlog1py", with({Compare, Compare, Log1p}, 1), with({Compare, Log1p}, 1),
         with({Divide}, 1));
  binary("hypot", with({Compare, Compare, Sqrt}, 3), with({Sqrt, Divide}, 3),
         with({Sqrt, Divide}, 3));
  binary("copysign", {Plain}, with({Compare, Compare}, 1), {});
  binary("pow", {Power}, with({Power}, 2), with({Power, Log}, 2));
  for (std::string_view name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    binary(name, {Compare}, {}, {});
  }
  for (std::string_view name : {"logical_and", "logical_or", "logical_xor"}) {
    binary(name, {Compare, Compare}, {}, {});
  }
  for (std::string_view name :
       {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}) {
    binary(name, {Plain}, {}, {});
  }
  // Euclid's algorithm: about 18 remainders for 32-bit operands (0.84 ln n on
  // average), and lcm's division and product.
  VectorArithmetic euclid(18, Remainder);
  euclid.push_back(Compare);
  binary("gcd", euclid, {}, {});
  binary("lcm", with(euclid, 2), {}, {});
  return t;
}

// activation_grad's activations: the derivative times the incoming
// gradient, from the forward input (relu, abs, gelu) or output (sigmoid:
// y (1 - y); tanh: 1 - y^2).
std::unordered_map<std::string_view, VectorArithmetic> makeActivationGradientTable() {
  return {{"relu", {Compare}},      {"sigmoid", with({}, 3)},   {"tanh", with({}, 3)},
          {"abs", with({Sign}, 1)}, {"gelu", with({Tanh}, 14)}, {"gelu_tanh", with({Tanh}, 14)}};
}

const ElementwiseArithmetic& find(const Table& table, std::string_view name, const char* what) {
  const auto found = table.find(name);
  POPSIM_ASSERT(found != table.end(), "no vector arithmetic for the ", what, " '",
                std::string(name), "'.");
  return found->second;
}

} // namespace

const ElementwiseArithmetic& pointwiseArithmetic(std::string_view function) {
  static const Table table = makePointwiseTable();
  return find(table, function, "pointwise function");
}

const ElementwiseArithmetic& binaryArithmetic(std::string_view function) {
  static const Table table = makeBinaryTable();
  return find(table, function, "binary function");
}

const VectorArithmetic& activationGradientArithmetic(std::string_view activation) {
  static const std::unordered_map<std::string_view, VectorArithmetic> table =
      makeActivationGradientTable();
  const auto found = table.find(activation);
  POPSIM_ASSERT(found != table.end(), "no vector arithmetic for the gradient of the activation '",
                std::string(activation), "'.");
  return found->second;
}

} // namespace popsim::ir
