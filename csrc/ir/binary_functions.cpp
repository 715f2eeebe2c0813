#include "ir/binary_functions.h"

#include <cmath>
#include <cstdint>

namespace popsim::ir {
namespace {

// Integer arithmetic wraps around on overflow as PyTorch's does on x86-64
// (done in unsigned arithmetic, where wrapping is defined).
int64_t wrap(uint64_t value) { return static_cast<int64_t>(value); }
int64_t add(int64_t a, int64_t b) {
  return wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t sub(int64_t a, int64_t b) {
  return wrap(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t mul(int64_t a, int64_t b) {
  return wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// a ** b on integers by squaring; negative exponents give 0 except for the
// bases 1 and -1, as in PyTorch.
int64_t integerPower(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b & 1) != 0 ? -1 : 1;
    return 0;
  }
  int64_t result = 1;
  for (; b != 0; b >>= 1) {
    if ((b & 1) != 0) result = mul(result, a);
    a = mul(a, a);
  }
  return result;
}

// The remainder with the sign of the divisor (Python's %), floats and integers.
double remainder(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}
int64_t integerRemainder(int64_t a, int64_t b) {
  int64_t mod = a % b;
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}

// Division rounded towards negative infinity, in PyTorch's float steps
// (each rounded to float32: exact multiples of b divide exactly; a zero
// quotient keeps its sign).
double floorDivide(double a, double b) {
  const auto f = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  if (b == 0) return a / b;
  const double mod = std::fmod(a, b);
  double quotient = f(f(a - mod) / b);
  if (mod != 0 && (b < 0) != (mod < 0)) quotient = f(quotient - 1.0);
  if (quotient == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(quotient);
  if (quotient - floored > 0.5) floored = f(floored + 1.0);
  return floored;
}
int64_t integerFloorDivide(int64_t a, int64_t b) {
  if ((a < 0) != (b < 0)) {
    const int64_t quotient = a / b;
    return a % b != 0 ? quotient - 1 : quotient;
  }
  return a / b;
}

// Float operands are float32: their quotient rounded to float is PyTorch's
// float division (a double quotient rounded again to float rounds correctly).
double truncDivide(double a, double b) { return std::trunc(static_cast<float>(a / b)); }

// a ** b as PyTorch's tensor-tensor pow; its gradient for b is zero where
// a == 0 and b >= 0 (where log(a) is -inf).
double powerOfA(double a, double b) { return b == 0.0 ? 0.0 : b * std::pow(a, b - 1.0); }
double powerOfB(double a, double b) {
  return a == 0.0 && b >= 0.0 ? 0.0 : std::pow(a, b) * std::log(a);
}

// maximum/minimum propagate NaN and split the gradient evenly between equal
// operands (of 0 and -0 they return the second, as PyTorch's vectorised
// loops do); fmax/fmin take the number over NaN, and the gradient goes to
// the operand they return.
double maximum(double a, double b) {
  return std::isnan(a) ? a : (std::isnan(b) ? b : (a > b ? a : b));
}
double minimum(double a, double b) {
  return std::isnan(a) ? a : (std::isnan(b) ? b : (a < b ? a : b));
}
double tieOr(double a, double b, bool wins) { return a == b ? 0.5 : (wins ? 1.0 : 0.0); }
bool fmaxTakesA(double a, double b) { return a >= b || std::isnan(b); }
bool fminTakesA(double a, double b) { return a <= b || std::isnan(b); }
// (Of equal operands, 0 and -0, fmax and fmin return the first, as PyTorch's do.)
double fmax(double a, double b) { return fmaxTakesA(a, b) ? a : b; }
double fmin(double a, double b) { return fminTakesA(a, b) ? a : b; }

double truth(bool value) { return value ? 1.0 : 0.0; }
int64_t integerTruth(bool value) { return value ? 1 : 0; }

constexpr auto kOperands = BinaryResult::Operands;
constexpr auto kBool = BinaryResult::Bool;
using I = int64_t;

// clang-format off
std::vector<BinaryFunction> makeTable() {
  return {
    // Integer arithmetic (float add, sub, mul and div are the IR's own ops).
    {"add", kOperands, [](double a, double b) { return a + b; }, add,
     [](double, double) { return 1.0; }, [](double, double) { return 1.0; }},
    {"sub", kOperands, [](double a, double b) { return a - b; }, sub,
     [](double, double) { return 1.0; }, [](double, double) { return -1.0; }},
    {"mul", kOperands, [](double a, double b) { return a * b; }, mul,
     [](double, double b) { return b; }, [](double a, double) { return a; }},
    {"maximum", kOperands, maximum, [](I a, I b) { return a > b ? a : b; },
     [](double a, double b) { return tieOr(a, b, !(a < b)); }, [](double a, double b) { return tieOr(a, b, !(a > b)); }},
    {"minimum", kOperands, minimum, [](I a, I b) { return a < b ? a : b; },
     [](double a, double b) { return tieOr(a, b, !(a > b)); }, [](double a, double b) { return tieOr(a, b, !(a < b)); }},
    {"fmax", kOperands, fmax, [](I a, I b) { return a > b ? a : b; },
     [](double a, double b) { return truth(fmaxTakesA(a, b)); }, [](double a, double b) { return truth(!fmaxTakesA(a, b)); }},
    {"fmin", kOperands, fmin, [](I a, I b) { return a < b ? a : b; },
     [](double a, double b) { return truth(fminTakesA(a, b)); }, [](double a, double b) { return truth(!fminTakesA(a, b)); }},
    // clamp with a tensor bound, one side at a time: NaN propagates, and the
    // gradient goes to x inside the bound, to the bound outside it.
    {"clamp_min", kOperands, maximum, [](I a, I b) { return a > b ? a : b; },
     [](double a, double b) { return truth(a >= b); }, [](double a, double b) { return truth(a < b); }},
    {"clamp_max", kOperands, minimum, [](I a, I b) { return a < b ? a : b; },
     [](double a, double b) { return truth(a <= b); }, [](double a, double b) { return truth(a > b); }},
    // prelu(x, weight): the weight scales the negative side.
    {"prelu", kOperands, [](double a, double w) { return a > 0 ? a : w * a; }, nullptr,
     [](double a, double w) { return a > 0 ? 1.0 : w; }, [](double a, double) { return a > 0 ? 0.0 : a; }},
    // Remainders and rounded divisions (whose gradients are zero in PyTorch).
    {"remainder", kOperands, remainder, integerRemainder,
     [](double, double) { return 1.0; }, [](double a, double b) { return -floorDivide(a, b); }, true},
    {"fmod", kOperands, [](double a, double b) { return std::fmod(a, b); }, [](I a, I b) { return a % b; },
     [](double, double) { return 1.0; }, [](double a, double b) { return -truncDivide(a, b); }, true},
    {"div_floor", kOperands, floorDivide, integerFloorDivide, nullptr, nullptr, true},
    {"div_trunc", kOperands, truncDivide, [](I a, I b) { return a / b; }, nullptr, nullptr, true},
    {"atan2", kOperands, [](double a, double b) { return std::atan2(a, b); }, nullptr,
     [](double a, double b) { return b / (a * a + b * b); }, [](double a, double b) { return -a / (a * a + b * b); }},
    {"pow", kOperands, [](double a, double b) { return std::pow(a, b); }, integerPower, powerOfA, powerOfB},
    // Comparisons and logical functions: bool results, no gradient.
    {"eq", kBool, [](double a, double b) { return truth(a == b); }, [](I a, I b) { return integerTruth(a == b); }, nullptr, nullptr},
    {"ne", kBool, [](double a, double b) { return truth(a != b); }, [](I a, I b) { return integerTruth(a != b); }, nullptr, nullptr},
    {"lt", kBool, [](double a, double b) { return truth(a < b); }, [](I a, I b) { return integerTruth(a < b); }, nullptr, nullptr},
    {"le", kBool, [](double a, double b) { return truth(a <= b); }, [](I a, I b) { return integerTruth(a <= b); }, nullptr, nullptr},
    {"gt", kBool, [](double a, double b) { return truth(a > b); }, [](I a, I b) { return integerTruth(a > b); }, nullptr, nullptr},
    {"ge", kBool, [](double a, double b) { return truth(a >= b); }, [](I a, I b) { return integerTruth(a >= b); }, nullptr, nullptr},
    {"logical_and", kBool, [](double a, double b) { return truth(a != 0 && b != 0); },
     [](I a, I b) { return integerTruth(a != 0 && b != 0); }, nullptr, nullptr},
    {"logical_or", kBool, [](double a, double b) { return truth(a != 0 || b != 0); },
     [](I a, I b) { return integerTruth(a != 0 || b != 0); }, nullptr, nullptr},
    {"logical_xor", kBool, [](double a, double b) { return truth((a != 0) != (b != 0)); },
     [](I a, I b) { return integerTruth((a != 0) != (b != 0)); }, nullptr, nullptr},
    // Bitwise functions: integer and bool operands only.
    {"bitwise_and", kOperands, nullptr, [](I a, I b) { return a & b; }, nullptr, nullptr},
    {"bitwise_or", kOperands, nullptr, [](I a, I b) { return a | b; }, nullptr, nullptr},
    {"bitwise_xor", kOperands, nullptr, [](I a, I b) { return a ^ b; }, nullptr, nullptr},
  };
}
// clang-format on

} // namespace

const std::vector<BinaryFunction>& binaryFunctions() {
  static const std::vector<BinaryFunction> table = makeTable();
  return table;
}

const BinaryFunction* findBinaryFunction(std::string_view name) {
  for (const BinaryFunction& function : binaryFunctions()) {
    if (function.name == name) return &function;
  }
  return nullptr;
}

} // namespace popsim::ir
