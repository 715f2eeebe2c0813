#pragma once

#include <cmath>
#include <limits>
#include <string_view>

// The formulas of the pointwise functions (pointwise_functions.h), written
// once for any arithmetic type: `M` names the type (`M::T`) and its maths
// (`M::exp`, `M::sqrt`, ...). The IR's table instantiates them on double
// with libm; the vectorised kernel instantiates them on vectors of doubles
// with SLEEF, so the per-element path and the vector path compute the same
// formula. Conditionals are `?:` on comparisons, which GCC evaluates lane by
// lane for vector types; scalar constants mix with vectors as in `x * 2.0`.
namespace popsim::ir {

template <class M> struct PointwiseFormula {
  using T = typename M::T;
  std::string_view name;
  std::string_view parameters; // comma-separated, in the order of the op's `params`
  T (*value)(T x, const double* params);
  // dy/dx at x; nullptr for piecewise-constant functions (floor, sign, ...),
  // whose gradient is zero, as in PyTorch.
  T (*derivative)(T x, const double* params);
};

// The maths of double precision, from libm: the formulas' reference
// instantiation (the IR's table, the reference kernels).
struct ScalarMath {
  using T = double;
  static double constant(double c) { return c; }
  static double exp(double x) { return std::exp(x); }
  static double expm1(double x) { return std::expm1(x); }
  static double log(double x) { return std::log(x); }
  static double log1p(double x) { return std::log1p(x); }
  static double log2(double x) { return std::log2(x); }
  static double log10(double x) { return std::log10(x); }
  static double sin(double x) { return std::sin(x); }
  static double cos(double x) { return std::cos(x); }
  static double tan(double x) { return std::tan(x); }
  static double asin(double x) { return std::asin(x); }
  static double acos(double x) { return std::acos(x); }
  static double atan(double x) { return std::atan(x); }
  static double sinh(double x) { return std::sinh(x); }
  static double cosh(double x) { return std::cosh(x); }
  static double tanh(double x) { return std::tanh(x); }
  static double asinh(double x) { return std::asinh(x); }
  static double acosh(double x) { return std::acosh(x); }
  static double atanh(double x) { return std::atanh(x); }
  static double erf(double x) { return std::erf(x); }
  static double erfc(double x) { return std::erfc(x); }
  static double lgamma(double x) { return std::lgamma(x); }
  static double sqrt(double x) { return std::sqrt(x); }
  static double pow(double x, double y) { return std::pow(x, y); }
  static double floor(double x) { return std::floor(x); }
  static double ceil(double x) { return std::ceil(x); }
  static double trunc(double x) { return std::trunc(x); }
  static double nearbyint(double x) { return std::nearbyint(x); }
  static double fabs(double x) { return std::fabs(x); }
  static double fmin(double x, double y) { return std::fmin(x, y); }
  static double fmax(double x, double y) { return std::fmax(x, y); }
  static double copysign(double x, double y) { return std::copysign(x, y); }
  static double fmod(double x, double y) { return std::fmod(x, y); }
  static double atan2(double y, double x) { return std::atan2(y, x); }
  // x rounded to float (PyTorch's float steps inside a double formula).
  static double toFloat(double x) { return static_cast<float>(x); }
};

namespace formulas {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

template <class M> typename M::T sigmoid(typename M::T x) { return 1.0 / (1.0 + M::exp(-x)); }

// PyTorch's sign: (0 < x) - (x < 0), so NaN gives 0.
template <class M> typename M::T sign(typename M::T x) {
  return (0.0 < x ? 1.0 : 0.0) - (x < 0.0 ? 1.0 : 0.0);
}

// The standard normal distribution's CDF (PyTorch's ndtr, through erfc, exact
// in the lower tail) and its density.
template <class M> typename M::T normalCdf(typename M::T x) {
  return 0.5 * M::erfc(-x * kSqrtHalf);
}
template <class M> typename M::T normalDensity(typename M::T x) {
  return M::exp(-0.5 * x * x) * (kSqrtHalf / kSqrtPi);
}

// softplus with PyTorch's threshold: linear once beta * x exceeds it.
template <class M> typename M::T softplus(typename M::T x, double beta, double threshold) {
  return x * beta > threshold ? x : M::log1p(M::exp(beta * x)) / beta;
}

// The inverse of erf: a first guess refined by Newton's method on erf.
template <class M> typename M::T erfinv(typename M::T y) {
  using T = typename M::T;
  const double a = 0.147;
  const T l = M::log(1.0 - y * y);
  const T t = 2.0 / (kPi * a) + l / 2.0;
  T x = M::copysign(M::sqrt(M::sqrt(t * t - l / a) - t), y);
  for (int i = 0; i < 4; ++i) {
    x -= (M::erf(x) - y) / (2.0 / kSqrtPi * M::exp(-x * x));
  }
  return y == -1.0 ? -kInfinity
                   : (y == 1.0 ? kInfinity
                               : (M::fabs(y) > 1.0 ? std::numeric_limits<double>::quiet_NaN() : x));
}

// digamma (psi, the derivative of lgamma) and trigamma (its derivative) on
// z >= 0: ten steps of the recurrences psi(z) = psi(z + 1) - 1 / z and
// psi'(z) = psi'(z + 1) + 1 / z^2 carry z past 10, where the asymptotic series
// (in 1 / w^2, Bernoulli numbers' coefficients) is exact to double precision.
// The loop has a fixed count so that vector lanes stay in step.
template <class M> typename M::T digammaOfPositive(typename M::T z) {
  using T = typename M::T;
  T shifted = M::constant(0.0);
  T w = z;
  for (int k = 0; k < 10; ++k) {
    shifted += 1.0 / w;
    w += 1.0;
  }
  const T r = 1.0 / (w * w);
  const T series =
      r *
      (1.0 / 12 -
       r * (1.0 / 120 -
            r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760 - r / 12.0))))));
  return M::log(w) - 0.5 / w - series - shifted;
}
template <class M> typename M::T trigammaOfPositive(typename M::T z) {
  using T = typename M::T;
  T shifted = M::constant(0.0);
  T w = z;
  for (int k = 0; k < 10; ++k) {
    shifted += 1.0 / (w * w);
    w += 1.0;
  }
  const T r = 1.0 / (w * w);
  const T series =
      1.0 + 0.5 / w +
      r * (1.0 / 6 -
           r * (1.0 / 30 - r * (1.0 / 42 - r * (1.0 / 30 - r * (5.0 / 66 - r * (691.0 / 2730 -
                                                                                r * 7.0 / 6))))));
  return series / w + shifted;
}

// digamma as PyTorch defines it: -inf at +0 and +inf at -0, NaN at the
// negative integers and -inf; below zero the reflection
// psi(x) = psi(1 - x) - pi / tan(pi x), with tan taken of x's fractional
// part, which pi * x would lose for large |x|.
template <class M> typename M::T digamma(typename M::T x) {
  const typename M::T fraction = x - M::trunc(x);
  const typename M::T reflected = digammaOfPositive<M>(1.0 - x) - kPi / M::tan(kPi * fraction);
  const typename M::T direct = digammaOfPositive<M>(x);
  return x == 0.0
             ? M::copysign(M::constant(kInfinity), -x)
             : (x < 0.0 ? (fraction == 0.0 ? std::numeric_limits<double>::quiet_NaN() : reflected)
                        : direct);
}
// trigamma, the derivative of digamma (PyTorch's polygamma(1, x)), with the
// reflection psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x) below 1/2.
template <class M> typename M::T trigamma(typename M::T x) {
  const typename M::T s = M::sin(kPi * (x - M::trunc(x)));
  const typename M::T reflected = kPi * kPi / (s * s) - trigammaOfPositive<M>(1.0 - x);
  return x < 0.5 ? reflected : trigammaOfPositive<M>(x);
}

// The modified Bessel functions of the first kind of orders 0 and 1, scaled
// by exp(-|x|) (PyTorch's special.i0e and special.i1e; i0 and i1 multiply
// the scale back). Below |x| = 20 the power series
// (x/2)^n sum_k (x^2/4)^k / (k! (k+n)!), whose terms are all positive, in 48
// terms (the last below 1e-17 of the sum at 20). From 20 up the asymptotic
// expansion exp(|x|) / sqrt(2 pi |x|) sum_k c_k / |x|^k, with
// c_k = c_(k-1) ((2k-1)^2 - 4n^2) / (8k) (Abramowitz and Stegun 9.7.1), in
// 30 terms (below 1e-17 from 20 on). Within 10 double roundings of the true
// value over the doubles; fixed counts keep vector lanes in step.
constexpr double kBesselSeriesLimit = 20.0;
template <class M> typename M::T besselSeries(typename M::T x, int order) {
  using T = typename M::T;
  const T quarterSquare = x * x / 4.0;
  T term = order == 0 ? M::constant(1.0) : x / 2.0;
  T sum = term;
  for (int k = 1; k < 48; ++k) {
    term *= quarterSquare / static_cast<double>(k * (k + order));
    sum += term;
  }
  return sum;
}
// The asymptotic sum at |x| = a, without its factor exp(a) / sqrt(2 pi a).
template <class M> typename M::T besselAsymptoticSum(typename M::T a, int order) {
  using T = typename M::T;
  const double mu = 4.0 * order * order;
  T term = M::constant(1.0);
  T sum = term;
  for (int k = 1; k <= 30; ++k) {
    const double odd = 2.0 * k - 1.0;
    term *= (odd * odd - mu) / (8.0 * k) / a;
    sum += term;
  }
  return sum;
}
template <class M> typename M::T besselScaled(typename M::T x, int order) {
  const typename M::T a = M::fabs(x);
  const typename M::T large = besselAsymptoticSum<M>(a, order) / M::sqrt(2.0 * kPi * a);
  const typename M::T small = M::exp(-a) * besselSeries<M>(x, order);
  return a < kBesselSeriesLimit ? small : (order == 0 ? large : M::copysign(large, x));
}
// Unscaled: exp(|x|) overflows past 709.78 as PyTorch's does, and the
// infinities give NaN (inf / inf), as PyTorch's i0 and i1 give.
template <class M> typename M::T bessel(typename M::T x, int order) {
  const typename M::T a = M::fabs(x);
  const typename M::T large = M::exp(a) / M::sqrt(2.0 * kPi * a) * besselAsymptoticSum<M>(a, order);
  const typename M::T small = besselSeries<M>(x, order);
  return a < kBesselSeriesLimit ? small : (order == 0 ? large : M::copysign(large, x));
}
// The derivatives of i1 and i1e as PyTorch's backward writes them: 0.5 (the
// limit at 0, where the formula divides 0 by 0) unless |x| is above the
// dtype's epsilon, so NaN gets 0.5 too. (Between 0 and the epsilon the
// formula gives 0.5 as well.)
template <class M> typename M::T besselI1Derivative(typename M::T x) {
  return M::fabs(x) > 0.0 ? bessel<M>(x, 0) - bessel<M>(x, 1) / x : M::constant(0.5);
}
template <class M> typename M::T besselI1eDerivative(typename M::T x) {
  return M::fabs(x) > 0.0 ? besselScaled<M>(x, 0) - besselScaled<M>(x, 1) * (sign<M>(x) + 1.0 / x)
                          : M::constant(0.5);
}

// The Hurwitz zeta function zeta(s, q) = sum_k (q + k)^-s for q > 0 and
// whole s >= 2: the first 10 + s terms summed, then the Euler-Maclaurin tail
// at w = q + 10 + s, w^(1-s) / (s-1) + w^-s / 2 + sum_j B_2j / (2j)!
// s (s+1) ... (s+2j-2) w^(-s-2j+1) over the Bernoulli numbers B_2 ... B_20.
// Within 1e-12 of PyTorch's double polygamma over s <= 21 (the shift grows
// with s, so the tail's terms stay small); fixed counts per s keep vector
// lanes in step.
template <class M> typename M::T hurwitzZeta(double s, typename M::T q) {
  using T = typename M::T;
  constexpr double kBernoulli[] = {1.0 / 6,       -1.0 / 30,      1.0 / 42, -1.0 / 30,
                                   5.0 / 66,      -691.0 / 2730,  7.0 / 6,  -3617.0 / 510,
                                   43867.0 / 798, -174611.0 / 330};
  T sum = M::constant(0.0);
  T w = q;
  for (int k = 0; k < 10 + static_cast<int>(s); ++k) {
    sum += M::pow(w, -s);
    w += 1.0;
  }
  T tail = M::pow(w, 1.0 - s) / (s - 1.0) + 0.5 * M::pow(w, -s);
  T power = M::pow(w, -s - 1.0);
  double rising = s;      // s (s+1) ... (s+2j-2)
  double factorial = 2.0; // (2j)!
  for (int j = 1; j <= 10; ++j) {
    tail += kBernoulli[j - 1] / factorial * rising * power;
    rising *= (s + 2.0 * j - 1.0) * (s + 2.0 * j);
    factorial *= (2.0 * j + 1.0) * (2.0 * j + 2.0);
    power /= w * w;
  }
  return sum + tail;
}

// polygamma(n, x) for n >= 2, as PyTorch defines it:
// (-1)^(n+1) n! zeta(n + 1, x) for x > 0. Below zero, the reflection
// psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x)), where
// d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)), P_0(c) = c and
// P_(k+1)(c) = -(1 + c^2) P_k'(c) (the reflection of digamma differentiated
// n times); cot is taken of x's fractional part. PyTorch's values elsewhere:
// +-inf (the sign of (-1)^(n+1)) at 0, the negative integers and -inf, NaN at
// +inf and NaN.
// The largest order (the lowering refuses larger ones): the cot polynomial's
// coefficients are computed per call, n^2 operations.
constexpr int kPolygammaMaxOrder = 60;
template <class M> typename M::T polygamma(typename M::T x, int n) {
  using T = typename M::T;
  // Order 1 is PyTorch's trigamma, with its values at the infinities (0 at
  // +inf, NaN at -inf).
  if (n == 1) return trigamma<M>(x);
  const double s = n + 1.0;
  const double sign = n % 2 == 1 ? 1.0 : -1.0;
  const double factorial = std::tgamma(s);
  // P_n's coefficients, lowest power first (degree n + 1, n <= kPolygammaMaxOrder).
  double coefficients[kPolygammaMaxOrder + 3] = {0.0, 1.0};
  double derivative[kPolygammaMaxOrder + 3];
  for (int k = 0; k < n && k < kPolygammaMaxOrder + 1; ++k) {
    for (int i = 1; i <= k + 1; ++i)
      derivative[i - 1] = i * coefficients[i];
    for (int i = 0; i <= k + 3; ++i)
      coefficients[i] = 0.0;
    for (int i = 0; i <= k; ++i) {
      coefficients[i] -= derivative[i];
      coefficients[i + 2] -= derivative[i];
    }
  }
  const T c = 1.0 / M::tan(kPi * (x - M::trunc(x)));
  T cotDerivative = M::constant(0.0);
  for (int i = n + 1; i >= 0; --i)
    cotDerivative = cotDerivative * c + coefficients[i];
  const T positive = sign * factorial * hurwitzZeta<M>(s, x);
  const double reflectedSign = n % 2 == 0 ? 1.0 : -1.0;
  const T reflected = reflectedSign * sign * factorial * hurwitzZeta<M>(s, 1.0 - x) -
                      std::pow(kPi, s) * cotDerivative;
  const T pole = M::constant(sign * kInfinity);
  return x > 0.0 ? (x == kInfinity ? std::numeric_limits<double>::quiet_NaN() : positive)
                 : (x == M::floor(x) ? pole : reflected);
}

// exp(x^2) erfc(x), the scaled complementary error function: directly below
// x = 26 (exp(x^2) then costs x^2 roundings of double, 8e-14 at most), and
// above, where erfc underflows, its asymptotic series
// 1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8)),
// exact to 3e-13 from 26 on. 0 at +inf, inf at -inf, as PyTorch's.
template <class M> typename M::T erfcx(typename M::T x) {
  using T = typename M::T;
  const T r = 1.0 / (x * x);
  const T series = (1.0 - r * (0.5 - r * (0.75 - r * (1.875 - r * 6.5625)))) / (x * kSqrtPi);
  return x < 26.0 ? M::exp(x * x) * M::erfc(x) : series;
}

// log(ndtr(x)) as PyTorch computes it: through erfcx below -1, where ndtr
// underflows long before its log does, through log1p above.
template <class M> typename M::T logNdtr(typename M::T x) {
  const typename M::T t = x * kSqrtHalf;
  return x < -1.0 ? M::log(erfcx<M>(-t) / 2.0) - t * t : M::log1p(-M::erfc(t) / 2.0);
}

// The inverse of ndtr: Abramowitz and Stegun's rational guess (26.2.23, within
// 4.5e-4) from the tail that holds min(p, 1 - p), then four Newton steps on
// ndtr there, each squaring the error. 1 - p of a float is exact in double.
// -inf at 0, inf at 1, NaN outside [0, 1], as PyTorch's.
template <class M> typename M::T ndtri(typename M::T p) {
  using T = typename M::T;
  const T q = p > 0.5 ? 1.0 - p : p; // the lower tail's probability
  const T t = M::sqrt(-2.0 * M::log(q));
  T x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                  (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int step = 0; step < 4; ++step) {
    x -= (normalCdf<M>(x) - q) / normalDensity<M>(x);
  }
  const T inside = p > 0.5 ? -x : x;
  return p == 0.0
             ? M::constant(-kInfinity)
             : (p == 1.0
                    ? M::constant(kInfinity)
                    : (p > 0.0 && p < 1.0 ? inside : std::numeric_limits<double>::quiet_NaN()));
}

// logit with PyTorch's kernels: without eps (eps < 0), NaN outside [0, 1]
// and an infinite gradient at 0 and 1; with eps, x clamped to
// [eps, 1 - eps] first (NaN stays NaN), the gradient zero outside it.
template <class M> typename M::T logit(typename M::T x, double eps) {
  const typename M::T z =
      eps < 0.0 ? x : (x < eps ? M::constant(eps) : (x > 1.0 - eps ? M::constant(1.0 - eps) : x));
  return M::log(z / (1.0 - z));
}
template <class M> typename M::T logitDerivative(typename M::T x, double eps) {
  const typename M::T inner = 1.0 / (x * (1.0 - x));
  if (eps < 0.0) {
    return x < 0.0 || x > 1.0 ? std::numeric_limits<double>::quiet_NaN()
                              : (x == 0.0 || x == 1.0 ? M::constant(kInfinity) : inner);
  }
  return x < eps || x > 1.0 - eps ? M::constant(0.0) : inner;
}

// sinc(x) = sin(pi x) / (pi x), 1 at 0. (PyTorch forms pi x in float, so
// its sinc(1) is -2.8e-8 where this one is 3.9e-17: both are zero to float's
// precision at that scale.)
template <class M> typename M::T sinc(typename M::T x) {
  const typename M::T t = kPi * x;
  return x == 0.0 ? M::constant(1.0) : M::sin(t) / t;
}
template <class M> typename M::T sincDerivative(typename M::T x) {
  const typename M::T t = kPi * x;
  return x == 0.0 ? M::constant(0.0) : (t * M::cos(t) - M::sin(t)) / (t * x);
}

// x ** exponent as PyTorch computes it: the exponents it special-cases go
// through multiplications, sqrt and reciprocals (which decide what negative
// and infinite x give), the others through pow.
template <class M> typename M::T power(typename M::T x, double exponent) {
  if (exponent == 2.0) return x * x;
  if (exponent == 3.0) return x * x * x;
  if (exponent == 0.5) return M::sqrt(x);
  if (exponent == -0.5) return 1.0 / M::sqrt(x);
  if (exponent == -1.0) return 1.0 / x;
  if (exponent == -2.0) return 1.0 / (x * x);
  return M::pow(x, exponent);
}

template <class M> auto isNan(typename M::T x) { return x != x; }

// min(max(x, low), high) with NaN staying NaN, as in PyTorch's kernels.
template <class M> typename M::T bounded(typename M::T x, double low, double high) {
  return isNan<M>(x) ? x : M::fmin(M::fmax(x, low), high);
}

// ELU and its relatives with PyTorch's branches: x <= 0 takes the
// exponential side, so NaN takes the linear one in the gradient.
template <class M>
typename M::T elu(typename M::T x, double alpha, double scale, double inputScale) {
  return x <= 0.0 ? scale * alpha * M::expm1(x * inputScale) : scale * x;
}
template <class M>
typename M::T eluDerivative(typename M::T x, double alpha, double scale, double inputScale) {
  return x <= 0.0 ? scale * alpha * inputScale * M::exp(x * inputScale) : scale;
}

// GELU, exact (with erf) and with PyTorch's tanh approximation, and their
// derivatives as PyTorch's backward kernels write them.
constexpr double kGeluTanhBeta = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kGeluTanhKappa = 0.044715;
template <class M> typename M::T gelu(typename M::T x) {
  return 0.5 * x * (1.0 + M::erf(x * kSqrtHalf));
}
template <class M> typename M::T geluDerivative(typename M::T x) {
  const typename M::T cdf = 0.5 * (1.0 + M::erf(x * kSqrtHalf));
  const typename M::T pdf = normalDensity<M>(x);
  return cdf + x * pdf;
}
template <class M> typename M::T geluTanh(typename M::T x) {
  return 0.5 * x * (1.0 + M::tanh(kGeluTanhBeta * (x + kGeluTanhKappa * x * x * x)));
}
template <class M> typename M::T geluTanhDerivative(typename M::T x) {
  const typename M::T t = M::tanh(kGeluTanhBeta * (x + kGeluTanhKappa * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * kGeluTanhBeta * (1.0 + 3.0 * kGeluTanhKappa * x * x);
}

// SELU's constants (Klambauer et al.), as PyTorch defines them.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

// torch.special's Bessel functions of orders 0 and 1 (J, Y, K and K scaled by
// e^x) and the spherical j0, in double to near its precision over the whole
// line. J and Y: below |x| = 17 their power series (A&S 9.1.10-11; 45 terms,
// whose cancellation costs at most 1e-10 absolute at 17), above it the Hankel
// expansions in a_k(nu) = prod (4 nu^2 - (2j - 1)^2) / (k! 8^k) (A&S 9.2.5;
// 30 terms, within 3e-14 from 17 on). K: below 2 its series (A&S 9.6.10-11),
// from 2 to 20 K_nu(x) = integral over t > 0 of exp(-x cosh t) cosh(nu t) by
// the trapezoidal rule (step 0.1 to t = 4: the rule's error is below 1e-30
// for an integrand analytic in a strip, as this one is), above 20 its Hankel
// expansion (A&S 9.7.2). PyTorch's values at the ends: J at the infinities
// NaN, Y and K at 0 -inf and inf, below 0 NaN; Y at inf NaN, K 0.
constexpr double kEulerGamma = 0.57721566490153286061;
constexpr int kBesselSeriesTerms = 45;

// The Hankel expansion's sums P and Q (J, Y) or the plain sum (K) at x >= 20.
template <class M> struct HankelSums { typename M::T p, q, plain; };
template <class M> HankelSums<M> hankelSums(typename M::T x, double order) {
  using T = typename M::T;
  const double mu = 4.0 * order * order;
  HankelSums<M> sums{M::constant(1.0), M::constant(0.0), M::constant(1.0)};
  const T inverse = 1.0 / x;
  T power = M::constant(1.0);
  double a = 1.0;
  for (int k = 1; k <= 30; ++k) {
    a *= (mu - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (8.0 * k);
    power = power * inverse;
    const T term = a * power;
    sums.plain = sums.plain + term;
    const double sign = (k / 2) % 2 == 0 ? 1.0 : -1.0; // (-1)^floor(k/2)
    if (k % 2 == 0) {
      sums.p = sums.p + sign * term;
    } else {
      sums.q = sums.q + sign * term;
    }
  }
  return sums;
}

// J_order(x), order 0 or 1.
template <class M> typename M::T besselJ(typename M::T x, int order) {
  using T = typename M::T;
  const T ax = M::fabs(x);
  const T y = ax * ax / 4.0;
  T term = order == 0 ? M::constant(1.0) : ax / 2.0;
  T series = term;
  for (int k = 1; k <= kBesselSeriesTerms; ++k) {
    term = term * -y / (static_cast<double>(k) * (k + order));
    series = series + term;
  }
  const HankelSums<M> h = hankelSums<M>(ax, order);
  const T phase = ax - (order / 2.0 + 0.25) * kPi;
  const T hankel = M::sqrt(2.0 / (kPi * ax)) * (h.p * M::cos(phase) - h.q * M::sin(phase));
  const T value = ax <= 17.0 ? series : hankel;
  if (order == 0) return value;
  return x < 0.0 ? -value : value; // J1 is odd
}

// The series of Y and K (A&S 9.1.11, 9.6.11) for order n = 0 or 1, as two
// sums over k of t_k = (sign y)^k / (k! (k + n)!): P = sum t_k and W = sum
// c_k t_k with c_k = psi(k + 1) + psi(k + n + 1) + 2 gamma (2 H_k for n = 0,
// 2 H_k + 1 / (k + 1) for n = 1).
template <class M> struct NeumannSums { typename M::T plain, weighted; };
template <class M> NeumannSums<M> neumannSums(typename M::T y, int order, double sign, int terms) {
  using T = typename M::T;
  T term = M::constant(1.0);
  NeumannSums<M> sums{term, M::constant(0.0)};
  double harmonic = 0.0;
  for (int k = 1; k <= terms; ++k) {
    harmonic += 1.0 / k;
    term = term * (sign * y) / (static_cast<double>(k) * (k + order));
    sums.plain = sums.plain + term;
    sums.weighted = sums.weighted + (2.0 * harmonic + (order == 1 ? 1.0 / (k + 1) : 0.0)) * term;
  }
  if (order == 1) sums.weighted = sums.weighted + 1.0; // c_0 = 1
  return sums;
}

// Y_order(x), order 0 or 1.
template <class M> typename M::T besselY(typename M::T x, int order) {
  using T = typename M::T;
  const T logHalf = M::log(x / 2.0);
  const NeumannSums<M> s = neumannSums<M>(x * x / 4.0, order, -1.0, kBesselSeriesTerms);
  const T series = order == 0 ? (2.0 / kPi) * ((logHalf + kEulerGamma) * s.plain - s.weighted / 2.0)
                              : -2.0 / (kPi * x) + (2.0 / kPi) * logHalf * (x / 2.0) * s.plain -
                                    x / (2.0 * kPi) * (s.weighted - 2.0 * kEulerGamma * s.plain);
  const HankelSums<M> h = hankelSums<M>(x, order);
  const T phase = x - (order / 2.0 + 0.25) * kPi;
  const T hankel = M::sqrt(2.0 / (kPi * x)) * (h.p * M::sin(phase) + h.q * M::cos(phase));
  const T value = x <= 17.0 ? series : hankel;
  return x == 0.0 ? M::constant(-kInfinity)
                  : (x < 0.0 ? M::constant(std::numeric_limits<double>::quiet_NaN()) : value);
}

// e^x K_nu(x) for x >= 2 and any order nu: up to 20 the trapezoidal sum of
// the integral of exp(-x (cosh t - 1)) cosh(nu t), above it the Hankel expansion.
template <class M> typename M::T besselKScaledAbove2(typename M::T x, double order) {
  using T = typename M::T;
  T integral = M::constant(0.5);
  for (int j = 1; j <= 40; ++j) {
    const double t = 0.1 * j;
    integral = integral + M::exp(-x * (std::cosh(t) - 1.0)) * std::cosh(order * t);
  }
  integral = 0.1 * integral;
  const T hankel = M::sqrt(kPi / (2.0 * x)) * hankelSums<M>(x, order).plain;
  return x <= 20.0 ? integral : hankel;
}

// e^x K_order(x), order 0 or 1.
template <class M> typename M::T besselKScaled(typename M::T x, int order) {
  using T = typename M::T;
  // Below 2: the series of K, times e^x.
  const T logHalf = M::log(x / 2.0);
  const NeumannSums<M> s = neumannSums<M>(x * x / 4.0, order, 1.0, 20);
  T series = order == 0 ? s.weighted / 2.0 - (logHalf + kEulerGamma) * s.plain
                        : 1.0 / x + logHalf * (x / 2.0) * s.plain -
                              x / 4.0 * (s.weighted - 2.0 * kEulerGamma * s.plain);
  series = series * M::exp(x);
  const T value = x <= 2.0 ? series : besselKScaledAbove2<M>(x, order);
  return x == 0.0 ? M::constant(kInfinity)
                  : (x < 0.0 ? M::constant(std::numeric_limits<double>::quiet_NaN()) : value);
}

// Airy's Ai(x): for -8 <= x < 2 its Maclaurin series Ai(0) f(x) + Ai'(0) g(x)
// (A&S 10.4.2; 60 terms of each, with at most 3e-10 of cancellation at -8);
// above 2 (1 / pi) sqrt(x / 3) K_(1/3)(zeta) and below -8
// (sqrt(-x) / 3) (J_(1/3)(zeta) + J_(-1/3)(zeta)) in their Hankel forms, with
// zeta = (2/3) |x|^(3/2) (A&S 10.4.14-15). NaN at the infinities, as PyTorch's.
template <class M> typename M::T airyAi(typename M::T x) {
  using T = typename M::T;
  const double atZero = 1.0 / (std::cbrt(9.0) * std::tgamma(2.0 / 3.0));
  const double slopeAtZero = -1.0 / (std::cbrt(3.0) * std::tgamma(1.0 / 3.0));
  const T cube = x * x * x;
  T f = M::constant(1.0), g = x, fSum = f, gSum = g;
  for (int k = 1; k <= 60; ++k) {
    f = f * cube / ((3.0 * k - 1.0) * (3.0 * k));
    g = g * cube / ((3.0 * k) * (3.0 * k + 1.0));
    fSum = fSum + f;
    gSum = gSum + g;
  }
  const T series = atZero * fSum + slopeAtZero * gSum;
  const T magnitude = M::fabs(x);
  const T zeta = 2.0 / 3.0 * magnitude * M::sqrt(magnitude);
  const T above = M::sqrt(x / 3.0) / kPi * besselKScaledAbove2<M>(zeta, 1.0 / 3.0) * M::exp(-zeta);
  // J_(+-1/3)(zeta) = sqrt(2 / (pi zeta)) (P cos chi - Q sin chi), chi = zeta - (nu/2 + 1/4) pi.
  const HankelSums<M> h = hankelSums<M>(zeta, 1.0 / 3.0);
  const T amplitude = M::sqrt(2.0 / (kPi * zeta));
  const T plus = zeta - 5.0 * kPi / 12.0, minus = zeta - kPi / 12.0;
  const T below = M::sqrt(magnitude) / 3.0 * amplitude *
                  (h.p * (M::cos(plus) + M::cos(minus)) - h.q * (M::sin(plus) + M::sin(minus)));
  const T value = x >= 2.0 ? above : (x < -8.0 ? below : series);
  return magnitude == kInfinity ? M::constant(std::numeric_limits<double>::quiet_NaN()) : value;
}

// frexp's exponent e of x = m 2^e with 0.5 <= |m| < 1: floor(log2 |x|) + 1,
// corrected by one where log2 rounds across an integer; 0 for 0, the
// infinities and NaN, as PyTorch's (C's) frexp gives. Exact: inputs are float
// values, normal numbers in double.
template <class M> typename M::T frexpExponent(typename M::T x) {
  using T = typename M::T;
  const T magnitude = M::fabs(x);
  T e = M::floor(M::log2(magnitude)) + 1.0;
  const T m = magnitude * M::pow(2.0, -e);
  e = m >= 1.0 ? e + 1.0 : (m < 0.5 ? e - 1.0 : e);
  return magnitude == 0.0 || !(magnitude < kInfinity) ? M::constant(0.0) : e;
}

// frexp's mantissa x / 2^e (x itself at 0, the infinities and NaN), and its
// derivative 1 / 2^e with 2^e rounded to float as PyTorch's backward divides
// (0 past 2^127, inf for a denormal x).
template <class M> typename M::T frexpMantissa(typename M::T x) {
  return x * M::pow(2.0, -frexpExponent<M>(x));
}
template <class M> typename M::T frexpMantissaDerivative(typename M::T x) {
  return 1.0 / M::toFloat(M::pow(2.0, frexpExponent<M>(x)));
}

// sin(x) / x, 1 at 0 (1 - x^2 / 6 below 1e-4, exact to double there), 0 at the infinities.
template <class M> typename M::T sphericalBesselJ0(typename M::T x) {
  const typename M::T ratio = M::sin(x) / x;
  return M::fabs(x) < 1e-4 ? 1.0 - x * x / 6.0
                           : (M::fabs(x) == kInfinity ? M::constant(0.0) : ratio);
}

// torch.special's orthogonal polynomials of degree n, with PyTorch 1.13's
// special values: 0 for n < 0, 1 for n = 0 whatever x is, and the exact
// values at the ends of [-1, 1] for the Chebyshev and Legendre kinds. The
// rest is each kind's three-term recurrence in double; PyTorch, in float,
// switches the Chebyshev kinds to their trigonometric forms inside (-1, 1)
// past a degree, the same polynomial within float's rounding.

// y_n of y_0 = 1, y_1 = first and y_(k+1) = next(k, y_(k-1), y_k), n >= 0.
template <class M, class Next>
typename M::T threeTermRecurrence(typename M::T first, int64_t n, Next next) {
  using T = typename M::T;
  if (n == 0) return M::constant(1.0);
  T previous = M::constant(1.0), current = first;
  for (int64_t k = 1; k < n; ++k) {
    const T following = next(static_cast<double>(k), previous, current);
    previous = current;
    current = following;
  }
  return current;
}

// The Chebyshev polynomials of the first to fourth kinds (kind 'T', 'U',
// 'V', 'W'): one recurrence 2x y_k - y_(k-1), from y_1 = x, 2x, 2x - 1 and
// 2x + 1; at x = 1 and x = -1 their closed values.
template <class M> typename M::T chebyshev(typename M::T x, int64_t n, char kind) {
  using T = typename M::T;
  if (n < 0) return M::constant(0.0);
  const double alternating = n % 2 == 0 ? 1.0 : -1.0; // (-1)^n
  const double degree = static_cast<double>(n);
  double atOne = 1.0, atMinusOne = alternating;
  T first = x;
  if (kind == 'U') {
    atOne = degree + 1.0;
    atMinusOne = alternating * (degree + 1.0);
    first = x + x;
  } else if (kind == 'V') {
    atMinusOne = alternating * (2.0 * degree + 1.0);
    first = x + x - 1.0;
  } else if (kind == 'W') {
    atOne = 2.0 * degree + 1.0;
    first = x + x + 1.0;
  }
  const T general =
      threeTermRecurrence<M>(first, n, [&](double, T p, T q) -> T { return (x + x) * q - p; });
  return x == 1.0 ? M::constant(atOne) : (x == -1.0 ? M::constant(atMinusOne) : general);
}

// Hermite's physicists' (H: 2x y_k - 2k y_(k-1)) and probabilists' (He:
// x y_k - k y_(k-1)) polynomials.
template <class M> typename M::T hermite(typename M::T x, int64_t n, bool physicists) {
  using T = typename M::T;
  if (n < 0) return M::constant(0.0);
  if (physicists) {
    return threeTermRecurrence<M>(
        x + x, n, [&](double k, T p, T q) -> T { return (x + x) * q - (k + k) * p; });
  }
  return threeTermRecurrence<M>(x, n, [&](double k, T p, T q) -> T { return x * q - k * p; });
}

// Laguerre's polynomials ((2k + 1 - x) y_k - k y_(k-1)) / (k + 1), 1 at x = 0.
template <class M> typename M::T laguerre(typename M::T x, int64_t n) {
  using T = typename M::T;
  if (n < 0) return M::constant(0.0);
  const T general = threeTermRecurrence<M>(1.0 - x, n, [&](double k, T p, T q) -> T {
    return ((k + k + 1.0 - x) * q - k * p) / (k + 1.0);
  });
  return x == 0.0 ? M::constant(1.0) : general;
}

// Legendre's polynomials ((2k + 1) x y_k - k y_(k-1)) / (k + 1), +-1 at the ends.
template <class M> typename M::T legendre(typename M::T x, int64_t n) {
  using T = typename M::T;
  if (n < 0) return M::constant(0.0);
  const T general = threeTermRecurrence<M>(
      x, n, [&](double k, T p, T q) -> T { return ((k + k + 1.0) * x * q - k * p) / (k + 1.0); });
  const double atMinusOne = n % 2 == 0 ? 1.0 : -1.0;
  return x == 1.0 ? M::constant(1.0) : (x == -1.0 ? M::constant(atMinusOne) : general);
}

} // namespace formulas

// Derivatives follow PyTorch's backward formulas where they decide what NaN
// and the kinks give (hardtanh passes the gradient of NaN, clamp does not).
// The table is a constant array (no std::vector), so a translation unit
// built for another instruction set instantiates no inline library code
// that the linker could share with the rest of popsim.
// clang-format off
template <class M> struct PointwiseFormulas {
  using T = typename M::T;
  using P = const double*;
  static constexpr PointwiseFormula<M> all[] = {
    {"reciprocal", "", [](T x, P) -> T { return 1.0 / x; }, [](T x, P) -> T { return -1.0 / (x * x); }},
    {"rsqrt", "", [](T x, P) -> T { return 1.0 / M::sqrt(x); }, [](T x, P) -> T { return -0.5 / (x * M::sqrt(x)); }},
    {"expm1", "", [](T x, P) -> T { return M::expm1(x); }, [](T x, P) -> T { return M::exp(x); }},
    {"log", "", [](T x, P) -> T { return M::log(x); }, [](T x, P) -> T { return 1.0 / x; }},
    {"log1p", "", [](T x, P) -> T { return M::log1p(x); }, [](T x, P) -> T { return 1.0 / (1.0 + x); }},
    {"log2", "", [](T x, P) -> T { return M::log2(x); }, [](T x, P) -> T { return 1.0 / (x * 0.69314718055994530942); }},
    {"log10", "", [](T x, P) -> T { return M::log10(x); }, [](T x, P) -> T { return 1.0 / (x * 2.30258509299404568402); }},
    {"sin", "", [](T x, P) -> T { return M::sin(x); }, [](T x, P) -> T { return M::cos(x); }},
    {"cos", "", [](T x, P) -> T { return M::cos(x); }, [](T x, P) -> T { return -M::sin(x); }},
    {"tan", "", [](T x, P) -> T { return M::tan(x); }, [](T x, P) -> T { return 1.0 + M::tan(x) * M::tan(x); }},
    {"asin", "", [](T x, P) -> T { return M::asin(x); }, [](T x, P) -> T { return 1.0 / M::sqrt(1.0 - x * x); }},
    {"acos", "", [](T x, P) -> T { return M::acos(x); }, [](T x, P) -> T { return -1.0 / M::sqrt(1.0 - x * x); }},
    {"atan", "", [](T x, P) -> T { return M::atan(x); }, [](T x, P) -> T { return 1.0 / (1.0 + x * x); }},
    {"sinh", "", [](T x, P) -> T { return M::sinh(x); }, [](T x, P) -> T { return M::cosh(x); }},
    {"cosh", "", [](T x, P) -> T { return M::cosh(x); }, [](T x, P) -> T { return M::sinh(x); }},
    {"asinh", "", [](T x, P) -> T { return M::asinh(x); }, [](T x, P) -> T { return 1.0 / M::sqrt(x * x + 1.0); }},
    {"acosh", "", [](T x, P) -> T { return M::acosh(x); }, [](T x, P) -> T { return 1.0 / M::sqrt(x * x - 1.0); }},
    {"atanh", "", [](T x, P) -> T { return M::atanh(x); }, [](T x, P) -> T { return 1.0 / (1.0 - x * x); }},
    {"erf", "", [](T x, P) -> T { return M::erf(x); }, [](T x, P) -> T { return 2.0 / formulas::kSqrtPi * M::exp(-x * x); }},
    {"erfc", "", [](T x, P) -> T { return M::erfc(x); }, [](T x, P) -> T { return -2.0 / formulas::kSqrtPi * M::exp(-x * x); }},
    {"erfinv", "", [](T x, P) -> T { return formulas::erfinv<M>(x); },
     [](T x, P) -> T { const T y = formulas::erfinv<M>(x); return formulas::kSqrtPi / 2.0 * M::exp(y * y); }},
    {"lgamma", "", [](T x, P) -> T { return M::lgamma(x); }, [](T x, P) -> T { return formulas::digamma<M>(x); }},
    {"digamma", "", [](T x, P) -> T { return formulas::digamma<M>(x); }, [](T x, P) -> T { return formulas::trigamma<M>(x); }},
    // Modified Bessel functions of the first kind (i1's derivative needs i0
    // and i1, i0e's its value's sign).
    {"i0", "", [](T x, P) -> T { return formulas::bessel<M>(x, 0); }, [](T x, P) -> T { return formulas::bessel<M>(x, 1); }},
    {"i0e", "", [](T x, P) -> T { return formulas::besselScaled<M>(x, 0); },
     [](T x, P) -> T { return formulas::besselScaled<M>(x, 1) - formulas::sign<M>(x) * formulas::besselScaled<M>(x, 0); }},
    {"i1", "", [](T x, P) -> T { return formulas::bessel<M>(x, 1); }, [](T x, P) -> T { return formulas::besselI1Derivative<M>(x); }},
    {"i1e", "", [](T x, P) -> T { return formulas::besselScaled<M>(x, 1); },
     [](T x, P) -> T { return formulas::besselI1eDerivative<M>(x); }},
    // polygamma(n, x) for n >= 1 (n = 0 is digamma); its derivative is the next order.
    {"polygamma", "n", [](T x, P p) -> T { return formulas::polygamma<M>(x, static_cast<int>(p[0])); },
     [](T x, P p) -> T { return formulas::polygamma<M>(x, static_cast<int>(p[0]) + 1); }},
    // torch.special's entropy term -x log x (0 at 0, -inf below, NaN at NaN) and
    // its gradient -(1 + log x).
    {"entr", "", [](T x, P) -> T { return x > 0.0 ? -x * M::log(x) : (x == 0.0 ? M::constant(0.0) : (x < 0.0 ? M::constant(-formulas::kInfinity) : x)); },
     [](T x, P) -> T { return -(1.0 + M::log(x)); }},
    // erfcx, log_ndtr and ndtri with PyTorch's gradients: 2 x erfcx(x) - 2 / sqrt(pi),
    // exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi) and sqrt(2 pi) exp(ndtri(p)^2 / 2).
    {"erfcx", "", [](T x, P) -> T { return formulas::erfcx<M>(x); },
     [](T x, P) -> T { return 2.0 * x * formulas::erfcx<M>(x) - 2.0 / formulas::kSqrtPi; }},
    {"log_ndtr", "", [](T x, P) -> T { return formulas::logNdtr<M>(x); },
     [](T x, P) -> T { return M::exp(-(formulas::logNdtr<M>(x) + x * x / 2.0)) * (formulas::kSqrtHalf / formulas::kSqrtPi); }},
    {"ndtri", "", [](T x, P) -> T { return formulas::ndtri<M>(x); },
     [](T x, P) -> T { const T y = formulas::ndtri<M>(x); return formulas::kSqrtPi / formulas::kSqrtHalf * M::exp(y * y / 2.0); }},
    {"logit", "eps", [](T x, P p) -> T { return formulas::logit<M>(x, p[0]); },
     [](T x, P p) -> T { return formulas::logitDerivative<M>(x, p[0]); }},
    {"sinc", "", [](T x, P) -> T { return formulas::sinc<M>(x); }, [](T x, P) -> T { return formulas::sincDerivative<M>(x); }},
    // The standard normal's CDF, and its density as the derivative.
    {"ndtr", "", [](T x, P) -> T { return formulas::normalCdf<M>(x); },
     [](T x, P) -> T { return formulas::normalDensity<M>(x); }},
    // -x flips the sign bit, of 0.0 and NaN too, as PyTorch's neg does (a product
    // by -1 leaves a NaN's sign as it is).
    {"neg", "", [](T x, P) -> T { return -x; }, [](T, P) -> T { return M::constant(-1.0); }},
    {"sign", "", [](T x, P) -> T { return formulas::sign<M>(x); }, nullptr},
    // torch.special's Bessel functions (no derivatives: PyTorch defines none).
    {"bessel_j0", "", [](T x, P) -> T { return formulas::besselJ<M>(x, 0); }, nullptr},
    {"bessel_j1", "", [](T x, P) -> T { return formulas::besselJ<M>(x, 1); }, nullptr},
    {"bessel_y0", "", [](T x, P) -> T { return formulas::besselY<M>(x, 0); }, nullptr},
    {"bessel_y1", "", [](T x, P) -> T { return formulas::besselY<M>(x, 1); }, nullptr},
    {"modified_bessel_k0", "", [](T x, P) -> T { return formulas::besselKScaled<M>(x, 0) * M::exp(-x); }, nullptr},
    {"modified_bessel_k1", "", [](T x, P) -> T { return formulas::besselKScaled<M>(x, 1) * M::exp(-x); }, nullptr},
    {"scaled_modified_bessel_k0", "", [](T x, P) -> T { return formulas::besselKScaled<M>(x, 0); }, nullptr},
    {"scaled_modified_bessel_k1", "", [](T x, P) -> T { return formulas::besselKScaled<M>(x, 1); }, nullptr},
    {"spherical_bessel_j0", "", [](T x, P) -> T { return formulas::sphericalBesselJ0<M>(x); }, nullptr},
    {"airy_ai", "", [](T x, P) -> T { return formulas::airyAi<M>(x); }, nullptr},
    // frexp's two results: the mantissa (differentiable) and the exponent.
    {"frexp_mantissa", "", [](T x, P) -> T { return formulas::frexpMantissa<M>(x); },
     [](T x, P) -> T { return formulas::frexpMantissaDerivative<M>(x); }},
    {"frexp_exponent", "", [](T x, P) -> T { return formulas::frexpExponent<M>(x); }, nullptr},
    // torch.special's orthogonal polynomials of degree n (no derivatives: PyTorch
    // defines none); the shifted Chebyshev kinds are the plain ones at 2x - 1.
    {"chebyshev_polynomial_t", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x, static_cast<int64_t>(p[0]), 'T'); }, nullptr},
    {"chebyshev_polynomial_u", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x, static_cast<int64_t>(p[0]), 'U'); }, nullptr},
    {"chebyshev_polynomial_v", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x, static_cast<int64_t>(p[0]), 'V'); }, nullptr},
    {"chebyshev_polynomial_w", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x, static_cast<int64_t>(p[0]), 'W'); }, nullptr},
    {"shifted_chebyshev_polynomial_t", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x + x - 1.0, static_cast<int64_t>(p[0]), 'T'); }, nullptr},
    {"shifted_chebyshev_polynomial_u", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x + x - 1.0, static_cast<int64_t>(p[0]), 'U'); }, nullptr},
    {"shifted_chebyshev_polynomial_v", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x + x - 1.0, static_cast<int64_t>(p[0]), 'V'); }, nullptr},
    {"shifted_chebyshev_polynomial_w", "n", [](T x, P p) -> T { return formulas::chebyshev<M>(x + x - 1.0, static_cast<int64_t>(p[0]), 'W'); }, nullptr},
    {"hermite_polynomial_h", "n", [](T x, P p) -> T { return formulas::hermite<M>(x, static_cast<int64_t>(p[0]), true); }, nullptr},
    {"hermite_polynomial_he", "n", [](T x, P p) -> T { return formulas::hermite<M>(x, static_cast<int64_t>(p[0]), false); }, nullptr},
    {"laguerre_polynomial_l", "n", [](T x, P p) -> T { return formulas::laguerre<M>(x, static_cast<int64_t>(p[0])); }, nullptr},
    {"legendre_polynomial_p", "n", [](T x, P p) -> T { return formulas::legendre<M>(x, static_cast<int64_t>(p[0])); }, nullptr},
    // The angle of a real number: pi below zero (-0.0 is not), 0 above, NaN kept.
    {"angle", "", [](T x, P) -> T { return x < 0.0 ? M::constant(formulas::kPi) : (x == x ? M::constant(0.0) : x); }, nullptr},
    {"floor", "", [](T x, P) -> T { return M::floor(x); }, nullptr},
    {"ceil", "", [](T x, P) -> T { return M::ceil(x); }, nullptr},
    {"round", "", [](T x, P) -> T { return M::nearbyint(x); }, nullptr}, // half to even
    {"trunc", "", [](T x, P) -> T { return M::trunc(x); }, nullptr},
    {"frac", "", [](T x, P) -> T { return x - M::trunc(x); }, [](T, P) -> T { return M::constant(1.0); }},
    // x ** exponent and base ** x.
    {"pow", "exponent", [](T x, P p) -> T { return formulas::power<M>(x, p[0]); },
     [](T x, P p) -> T { return p[0] == 0.0 ? M::constant(0.0) : p[0] * formulas::power<M>(x, p[0] - 1.0); }},
    {"rpow", "base", [](T x, P p) -> T { return M::pow(p[0], x); },
     [](T x, P p) -> T { return M::pow(p[0], x) * std::log(p[0]); }},
    // Bounds: clamp's gradient includes them, hardtanh's excludes them.
    {"clamp", "min,max", [](T x, P p) -> T { return formulas::bounded<M>(x, p[0], p[1]); },
     [](T x, P p) -> T { return x >= p[0] && x <= p[1] ? 1.0 : 0.0; }},
    {"hardtanh", "min,max", [](T x, P p) -> T { return formulas::bounded<M>(x, p[0], p[1]); },
     [](T x, P p) -> T { return x <= p[0] || x >= p[1] ? 0.0 : 1.0; }},
    // Activations.
    {"silu", "", [](T x, P) -> T { return x * formulas::sigmoid<M>(x); },
     [](T x, P) -> T { const T s = formulas::sigmoid<M>(x); return s * (1.0 + x * (1.0 - s)); }},
    // GELU's gradients (its forward is oneDNN's, which computes what PyTorch does).
    {"gelu", "", [](T x, P) -> T { return formulas::gelu<M>(x); },
     [](T x, P) -> T { return formulas::geluDerivative<M>(x); }},
    {"gelu_tanh", "", [](T x, P) -> T { return formulas::geluTanh<M>(x); },
     [](T x, P) -> T { return formulas::geluTanhDerivative<M>(x); }},
    {"mish", "", [](T x, P) -> T { return x * M::tanh(formulas::softplus<M>(x, 1.0, 20.0)); },
     [](T x, P) -> T { const T t = M::tanh(formulas::softplus<M>(x, 1.0, 20.0)); return t + x * formulas::sigmoid<M>(x) * (1.0 - t * t); }},
    {"hardswish", "", [](T x, P) -> T { return x * formulas::bounded<M>(x + 3.0, 0.0, 6.0) / 6.0; },
     [](T x, P) -> T { return x < -3.0 ? 0.0 : (x <= 3.0 ? x / 3.0 + 0.5 : 1.0); }},
    {"hardsigmoid", "", [](T x, P) -> T { return formulas::bounded<M>(x + 3.0, 0.0, 6.0) / 6.0; },
     [](T x, P) -> T { return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0; }},
    {"elu", "alpha,scale,input_scale", [](T x, P p) -> T { return formulas::elu<M>(x, p[0], p[1], p[2]); },
     [](T x, P p) -> T { return formulas::eluDerivative<M>(x, p[0], p[1], p[2]); }},
    {"selu", "", [](T x, P) -> T { return formulas::elu<M>(x, formulas::kSeluAlpha, formulas::kSeluScale, 1.0); },
     [](T x, P) -> T { return formulas::eluDerivative<M>(x, formulas::kSeluAlpha, formulas::kSeluScale, 1.0); }},
    {"celu", "alpha", [](T x, P p) -> T { return formulas::elu<M>(x, p[0], 1.0, 1.0 / p[0]); },
     [](T x, P p) -> T { return formulas::eluDerivative<M>(x, p[0], 1.0, 1.0 / p[0]); }},
    {"leaky_relu", "negative_slope", [](T x, P p) -> T { return x > 0.0 ? x : x * p[0]; },
     [](T x, P p) -> T { return x > 0.0 ? 1.0 : p[0]; }},
    {"softplus", "beta,threshold", [](T x, P p) -> T { return formulas::softplus<M>(x, p[0], p[1]); },
     [](T x, P p) -> T { return x * p[0] > p[1] ? 1.0 : formulas::sigmoid<M>(p[0] * x); }},
    {"log_sigmoid", "", [](T x, P) -> T { return M::fmin(x, 0.0) - M::log1p(M::exp(-M::fabs(x))); },
     [](T x, P) -> T { return 1.0 - formulas::sigmoid<M>(x); }},
    {"hardshrink", "lambda", [](T x, P p) -> T { return x >= -p[0] && x <= p[0] ? 0.0 : x; },
     [](T x, P p) -> T { return x >= -p[0] && x <= p[0] ? 0.0 : 1.0; }},
    {"softshrink", "lambda", [](T x, P p) -> T { return x > p[0] ? x - p[0] : (x < -p[0] ? x + p[0] : 0.0); },
     [](T x, P p) -> T { return x >= -p[0] && x <= p[0] ? 0.0 : 1.0; }},
    {"threshold", "threshold,value", [](T x, P p) -> T { return x <= p[0] ? p[1] : x; },
     [](T x, P p) -> T { return x <= p[0] ? 0.0 : 1.0; }},
    // The root of a p-norm, sum ** (1 / p): its gradient is zero where the sum
    // is (a zero vector), as PyTorch's norm backward masks it.
    {"norm_root", "exponent", [](T x, P p) -> T { return formulas::power<M>(x, p[0]); },
     [](T x, P p) -> T { return x == 0.0 ? 0.0 : p[0] * formulas::power<M>(x, p[0] - 1.0); }},
    // |x| whose gradient at NaN is NaN (abs's is 0, as PyTorch's scalar loop
    // has it): cdist's gradient for p = 1 (sign(diff) in PyTorch's kernel).
    {"magnitude", "", [](T x, P) -> T { return M::fabs(x); },
     [](T x, P) -> T { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : x)); }},
    // |x| ** exponent for the p-norms with p < 1: the gradient at 0 is 0, as
    // PyTorch's norm backward masks it (pow's would be infinite there).
    {"magnitude_pow", "exponent", [](T x, P p) -> T { return formulas::power<M>(M::fabs(x), p[0]); },
     [](T x, P p) -> T {
       const T direction = x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x);
       return x == 0.0 ? 0.0 : direction * p[0] * formulas::power<M>(M::fabs(x), p[0] - 1.0); }},
    // The root of a sum of squares floored at `min`, whose gradient is the
    // root's at the floored value: PyTorch's cosine_similarity floors the sum
    // in place outside autograd, so its gradient passes the floor.
    {"root_of_floored", "min", [](T x, P p) -> T { return M::sqrt(formulas::isNan<M>(x) ? x : M::fmax(x, p[0])); },
     [](T x, P p) -> T { return 0.5 / M::sqrt(formulas::isNan<M>(x) ? x : M::fmax(x, p[0])); }},
    // Replacements for NaN and the infinities; the gradient passes finite values only.
    {"nan_to_num", "nan,posinf,neginf",
     [](T x, P p) -> T {
       const T infinite = x > 0.0 ? p[1] : p[2];
       return formulas::isNan<M>(x) ? p[0] : (M::fabs(x) == formulas::kInfinity ? infinite : x); },
     [](T x, P) -> T { return x - x == 0.0 ? 1.0 : 0.0; }},
    // NaN as 0, every other value (infinities too) kept; the gradient times
    // the mask of numbers, as PyTorch's nansum multiplies it (an infinite
    // gradient at a NaN gives NaN).
    {"nan_to_zero", "",
     [](T x, P) -> T { return formulas::isNan<M>(x) ? 0.0 : x; },
     [](T x, P) -> T { return formulas::isNan<M>(x) ? 0.0 : 1.0; }},
  };
};
// clang-format on

} // namespace popsim::ir
