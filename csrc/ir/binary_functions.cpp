#include "ir/binary_functions.h"

#include "ir/binary_formulas.h"

#include <cstdint>
#include <iterator>

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

// The remainder with the sign of the divisor (Python's %).
int64_t integerRemainder(int64_t a, int64_t b) {
  int64_t mod = a % b;
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}

// Integer division rounded towards negative infinity.
int64_t integerFloorDivide(int64_t a, int64_t b) {
  if ((a < 0) != (b < 0)) {
    const int64_t quotient = a / b;
    return a % b != 0 ? quotient - 1 : quotient;
  }
  return a / b;
}

int64_t integerTruth(bool value) { return value ? 1 : 0; }

// |a| wrapping as PyTorch's does (the most negative value stays itself).
int64_t magnitude(int64_t a) { return a < 0 ? wrap(0 - static_cast<uint64_t>(a)) : a; }

// The greatest common divisor of |a| and |b| by Euclid's algorithm, as
// PyTorch's gcd (0 for two zeros), and the least common multiple
// |a / gcd * b| (0 where either is 0).
int64_t integerGcd(int64_t a, int64_t b) {
  a = magnitude(a);
  b = magnitude(b);
  while (a != 0) {
    const int64_t c = a;
    a = b % a;
    b = c;
  }
  return b;
}
int64_t integerLcm(int64_t a, int64_t b) {
  const int64_t g = integerGcd(a, b);
  return g == 0 ? 0 : magnitude(mul(a / g, b));
}

constexpr auto kOperands = BinaryResult::Operands;
constexpr auto kBool = BinaryResult::Bool;
using I = int64_t;

// What only the IR's table says of a function: its result, its integer
// values and whether it divides integers; its float value and derivatives
// come from its formula (binary_formulas.h), named alike.
struct Entry {
  std::string_view name;
  BinaryResult result;
  int64_t (*integerValue)(int64_t a, int64_t b);
  bool dividesIntegers = false;
};

// clang-format off
const Entry kFunctions[] = {
    {"add", kOperands, add},
    {"sub", kOperands, sub},
    {"mul", kOperands, mul},
    {"maximum", kOperands, [](I a, I b) { return a > b ? a : b; }},
    {"minimum", kOperands, [](I a, I b) { return a < b ? a : b; }},
    {"fmax", kOperands, [](I a, I b) { return a > b ? a : b; }},
    {"fmin", kOperands, [](I a, I b) { return a < b ? a : b; }},
    {"clamp_min", kOperands, [](I a, I b) { return a > b ? a : b; }},
    {"clamp_max", kOperands, [](I a, I b) { return a < b ? a : b; }},
    {"prelu", kOperands, nullptr},
    {"remainder", kOperands, integerRemainder, true},
    {"fmod", kOperands, [](I a, I b) { return a % b; }, true},
    {"div_floor", kOperands, integerFloorDivide, true},
    {"div_trunc", kOperands, [](I a, I b) { return a / b; }, true},
    {"atan2", kOperands, nullptr}, // PyTorch computes it in floating point only
    {"logaddexp", kOperands, nullptr},
    {"xlogy", kOperands, nullptr},
    {"xlog1py", kOperands, nullptr},
    {"hypot", kOperands, nullptr}, // PyTorch computes it in floating point only
    {"copysign", kOperands, nullptr}, // PyTorch computes it in floating point only
    {"pow", kOperands, integerPower},
    {"eq", kBool, [](I a, I b) { return integerTruth(a == b); }},
    {"ne", kBool, [](I a, I b) { return integerTruth(a != b); }},
    {"lt", kBool, [](I a, I b) { return integerTruth(a < b); }},
    {"le", kBool, [](I a, I b) { return integerTruth(a <= b); }},
    {"gt", kBool, [](I a, I b) { return integerTruth(a > b); }},
    {"ge", kBool, [](I a, I b) { return integerTruth(a >= b); }},
    {"logical_and", kBool, [](I a, I b) { return integerTruth(a != 0 && b != 0); }},
    {"logical_or", kBool, [](I a, I b) { return integerTruth(a != 0 || b != 0); }},
    {"logical_xor", kBool, [](I a, I b) { return integerTruth((a != 0) != (b != 0)); }},
    // Integer operands only (no formula), as in PyTorch.
    {"gcd", kOperands, integerGcd},
    {"lcm", kOperands, integerLcm},
    // Bitwise functions: integer and bool operands only (no formula).
    {"bitwise_and", kOperands, [](I a, I b) { return a & b; }},
    {"bitwise_or", kOperands, [](I a, I b) { return a | b; }},
    {"bitwise_xor", kOperands, [](I a, I b) { return a ^ b; }},
    // Counts within [0, 63] (the lowering masks them to the dtype's width);
    // int32 results wrap around when cast back.
    {"bitwise_left_shift", kOperands, [](I a, I b) { return wrap(static_cast<uint64_t>(a) << b); }},
    {"bitwise_right_shift", kOperands, [](I a, I b) { return a >> b; }},
};
// clang-format on

std::vector<BinaryFunction> makeTable() {
  std::vector<BinaryFunction> table;
  for (const Entry& side : kFunctions) {
    BinaryFunction function{side.name, side.result,          nullptr,   side.integerValue, nullptr,
                            nullptr,   side.dividesIntegers, kNoFormula};
    const auto& formulas = BinaryFormulas<ScalarMath>::all;
    for (size_t index = 0; index < std::size(formulas); ++index) {
      if (formulas[index].name != side.name) continue;
      function.value = formulas[index].value;
      function.derivativeA = formulas[index].derivativeA;
      function.derivativeB = formulas[index].derivativeB;
      function.formula = index;
    }
    table.push_back(function);
  }
  return table;
}

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
