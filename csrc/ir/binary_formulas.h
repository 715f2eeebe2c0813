#pragma once

#include "ir/pointwise_formulas.h"

#include <string_view>

// The float formulas of the binary functions (binary_functions.h), written
// once for any arithmetic type `M`, as the pointwise formulas are: the IR's
// table instantiates them on double with libm, the vectorised kernels on
// SLEEF's vectors of doubles. Comparisons give 1 or 0.
namespace popsim::ir {

template <class M> struct BinaryFormula {
  using T = typename M::T;
  std::string_view name;
  T (*value)(T a, T b);
  // d/da and d/db at (a, b); nullptr where the gradient is zero (rounded
  // divisions) or the result is not differentiable (comparisons).
  T (*derivativeA)(T a, T b);
  T (*derivativeB)(T a, T b);
};

namespace binary_formulas {

// The remainder with the sign of the divisor (Python's %).
template <class M> typename M::T remainder(typename M::T a, typename M::T b) {
  const typename M::T mod = M::fmod(a, b);
  return mod != 0.0 && (b < 0.0) != (mod < 0.0) ? mod + b : mod;
}

// Division rounded towards negative infinity, in PyTorch's float steps
// (each rounded to float32: exact multiples of b divide exactly; a zero
// quotient keeps its sign).
template <class M> typename M::T floorDivide(typename M::T a, typename M::T b) {
  using T = typename M::T;
  const T mod = M::fmod(a, b);
  T quotient = M::toFloat(M::toFloat(a - mod) / b);
  quotient = mod != 0.0 && (b < 0.0) != (mod < 0.0) ? M::toFloat(quotient - 1.0) : quotient;
  T floored = M::floor(quotient);
  floored = quotient - floored > 0.5 ? M::toFloat(floored + 1.0) : floored;
  const T signedZero = M::copysign(M::constant(0.0), a / b);
  return b == 0.0 ? a / b : (quotient == 0.0 ? signedZero : floored);
}

// Float operands are float32: their quotient rounded to float is PyTorch's
// float division (a double quotient rounded again to float rounds correctly).
template <class M> typename M::T truncDivide(typename M::T a, typename M::T b) {
  return M::trunc(M::toFloat(a / b));
}

// maximum/minimum propagate NaN; fmax/fmin take the number over NaN (of
// equal operands, 0 and -0, fmax and fmin return the first, as PyTorch's do).
template <class M> typename M::T maximum(typename M::T a, typename M::T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}
template <class M> typename M::T minimum(typename M::T a, typename M::T b) {
  return a != a ? a : (b != b ? b : (a < b ? a : b));
}
template <class M> auto fmaxTakesA(typename M::T a, typename M::T b) { return a >= b || b != b; }
template <class M> auto fminTakesA(typename M::T a, typename M::T b) { return a <= b || b != b; }

// maximum's and minimum's gradient: split evenly between equal operands.
template <class M, class Mask> typename M::T tieOr(typename M::T a, typename M::T b, Mask wins) {
  return a == b ? 0.5 : (wins ? 1.0 : 0.0);
}

} // namespace binary_formulas

// clang-format off
template <class M> struct BinaryFormulas {
  using T = typename M::T;
  static constexpr BinaryFormula<M> all[] = {
    // Integer arithmetic's float counterparts (float add, sub, mul and div
    // are the IR's own ops).
    {"add", [](T a, T b) -> T { return a + b; },
     [](T, T) -> T { return M::constant(1.0); }, [](T, T) -> T { return M::constant(1.0); }},
    {"sub", [](T a, T b) -> T { return a - b; },
     [](T, T) -> T { return M::constant(1.0); }, [](T, T) -> T { return M::constant(-1.0); }},
    {"mul", [](T a, T b) -> T { return a * b; }, [](T, T b) -> T { return b; }, [](T a, T) -> T { return a; }},
    {"maximum", [](T a, T b) -> T { return binary_formulas::maximum<M>(a, b); },
     [](T a, T b) -> T { return binary_formulas::tieOr<M>(a, b, !(a < b)); },
     [](T a, T b) -> T { return binary_formulas::tieOr<M>(a, b, !(a > b)); }},
    {"minimum", [](T a, T b) -> T { return binary_formulas::minimum<M>(a, b); },
     [](T a, T b) -> T { return binary_formulas::tieOr<M>(a, b, !(a > b)); },
     [](T a, T b) -> T { return binary_formulas::tieOr<M>(a, b, !(a < b)); }},
    {"fmax", [](T a, T b) -> T { return binary_formulas::fmaxTakesA<M>(a, b) ? a : b; },
     [](T a, T b) -> T { return binary_formulas::fmaxTakesA<M>(a, b) ? 1.0 : 0.0; },
     [](T a, T b) -> T { return binary_formulas::fmaxTakesA<M>(a, b) ? 0.0 : 1.0; }},
    {"fmin", [](T a, T b) -> T { return binary_formulas::fminTakesA<M>(a, b) ? a : b; },
     [](T a, T b) -> T { return binary_formulas::fminTakesA<M>(a, b) ? 1.0 : 0.0; },
     [](T a, T b) -> T { return binary_formulas::fminTakesA<M>(a, b) ? 0.0 : 1.0; }},
    // clamp with a tensor bound, one side at a time: NaN propagates, and the
    // gradient goes to x inside the bound, to the bound outside it.
    {"clamp_min", [](T a, T b) -> T { return binary_formulas::maximum<M>(a, b); },
     [](T a, T b) -> T { return a >= b ? 1.0 : 0.0; }, [](T a, T b) -> T { return a < b ? 1.0 : 0.0; }},
    {"clamp_max", [](T a, T b) -> T { return binary_formulas::minimum<M>(a, b); },
     [](T a, T b) -> T { return a <= b ? 1.0 : 0.0; }, [](T a, T b) -> T { return a > b ? 1.0 : 0.0; }},
    // prelu(x, weight): the weight scales the negative side.
    {"prelu", [](T a, T w) -> T { return a > 0.0 ? a : w * a; },
     [](T a, T w) -> T { return a > 0.0 ? 1.0 : w; }, [](T a, T) -> T { return a > 0.0 ? 0.0 : a; }},
    // Remainders and rounded divisions (whose gradients are zero in PyTorch).
    {"remainder", [](T a, T b) -> T { return binary_formulas::remainder<M>(a, b); },
     [](T, T) -> T { return M::constant(1.0); }, [](T a, T b) -> T { return -binary_formulas::floorDivide<M>(a, b); }},
    {"fmod", [](T a, T b) -> T { return M::fmod(a, b); },
     [](T, T) -> T { return M::constant(1.0); }, [](T a, T b) -> T { return -binary_formulas::truncDivide<M>(a, b); }},
    {"div_floor", [](T a, T b) -> T { return binary_formulas::floorDivide<M>(a, b); }, nullptr, nullptr},
    {"div_trunc", [](T a, T b) -> T { return binary_formulas::truncDivide<M>(a, b); }, nullptr, nullptr},
    {"atan2", [](T a, T b) -> T { return M::atan2(a, b); },
     [](T a, T b) -> T { return b / (a * a + b * b); }, [](T a, T b) -> T { return -a / (a * a + b * b); }},
    // log(exp(a) + exp(b)) as PyTorch's kernel: equal infinities give
    // themselves, otherwise the larger plus log1p of the other's exp; the
    // gradients PyTorch's, 1 / (1 + exp(b - a)) and 1 / (1 + exp(a - b)).
    {"logaddexp",
     [](T a, T b) -> T {
       const T larger = binary_formulas::maximum<M>(a, b);
       return a == b && M::fabs(a) == formulas::kInfinity ? a
                                     : larger + M::log1p(M::exp(-M::fabs(a - b))); },
     [](T a, T b) -> T { return 1.0 / (1.0 + M::exp(b - a)); },
     [](T a, T b) -> T { return 1.0 / (1.0 + M::exp(a - b)); }},
    // a * log(b), 0 where a is 0 (NaN where b is NaN), as PyTorch's xlogy;
    // its gradients log(b) (0 where a is 0 and b <= 0) and a / b.
    {"xlogy",
     [](T a, T b) -> T { return b != b ? b : (a == 0.0 ? 0.0 : a * M::log(b)); },
     [](T a, T b) -> T { return a == 0.0 && b <= 0.0 ? 0.0 : M::log(b); },
     [](T a, T b) -> T { return a / b; }},
    // a * log1p(b), 0 where a is 0 (NaN where b is NaN), as PyTorch's xlog1py;
    // its gradients log1p(b) (0 where a is 0 and b <= -1) and a / (1 + b).
    {"xlog1py",
     [](T a, T b) -> T { return b != b ? b : (a == 0.0 ? 0.0 : a * M::log1p(b)); },
     [](T a, T b) -> T { return a == 0.0 && b <= -1.0 ? 0.0 : M::log1p(b); },
     [](T a, T b) -> T { return a / (1.0 + b); }},
    // sqrt(a^2 + b^2) as std::hypot (computed in double, it cannot overflow
    // for float operands): an infinity gives inf, with NaN too. Its gradients
    // a / h and b / h, as PyTorch's (NaN where h is 0 or infinite).
    {"hypot",
     [](T a, T b) -> T {
       return M::fabs(a) == formulas::kInfinity || M::fabs(b) == formulas::kInfinity
                  ? formulas::kInfinity : M::sqrt(a * a + b * b); },
     [](T a, T b) -> T { return a / M::sqrt(a * a + b * b); },
     [](T a, T b) -> T { return b / M::sqrt(a * a + b * b); }},
    // |a| with b's sign bit (so -0.0 and a negative NaN count as negative). Its
    // gradient for a is PyTorch's result / a, 0 where a is 0 (NaN at infinities,
    // as PyTorch's); b's sign passes no gradient.
    {"copysign", [](T a, T b) -> T { return M::copysign(a, b); },
     [](T a, T b) -> T { return a == 0.0 ? M::constant(0.0) : M::copysign(a, b) / a; },
     nullptr},
    // a ** b as PyTorch's tensor-tensor pow; its gradient for b is zero where
    // a == 0 and b >= 0 (where log(a) is -inf).
    {"pow", [](T a, T b) -> T { return M::pow(a, b); },
     [](T a, T b) -> T { return b == 0.0 ? 0.0 : b * M::pow(a, b - 1.0); },
     [](T a, T b) -> T { return a == 0.0 && b >= 0.0 ? 0.0 : M::pow(a, b) * M::log(a); }},
    // Comparisons and logical functions: 1 or 0, no gradient.
    {"eq", [](T a, T b) -> T { return a == b ? 1.0 : 0.0; }, nullptr, nullptr},
    {"ne", [](T a, T b) -> T { return a != b ? 1.0 : 0.0; }, nullptr, nullptr},
    {"lt", [](T a, T b) -> T { return a < b ? 1.0 : 0.0; }, nullptr, nullptr},
    {"le", [](T a, T b) -> T { return a <= b ? 1.0 : 0.0; }, nullptr, nullptr},
    {"gt", [](T a, T b) -> T { return a > b ? 1.0 : 0.0; }, nullptr, nullptr},
    {"ge", [](T a, T b) -> T { return a >= b ? 1.0 : 0.0; }, nullptr, nullptr},
    {"logical_and", [](T a, T b) -> T { return a != 0.0 && b != 0.0 ? 1.0 : 0.0; }, nullptr, nullptr},
    {"logical_or", [](T a, T b) -> T { return a != 0.0 || b != 0.0 ? 1.0 : 0.0; }, nullptr, nullptr},
    {"logical_xor", [](T a, T b) -> T { return (a != 0.0) != (b != 0.0) ? 1.0 : 0.0; }, nullptr, nullptr},
  };
};
// clang-format on

} // namespace popsim::ir
