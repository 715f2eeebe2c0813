#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace popsim::ir {

// What a binary function's result is: the operands' dtype (both operands
// share it; the lowering converts them as PyTorch's type promotion says), or
// bool for comparisons and logical functions of any two dtypes.
enum class BinaryResult { Operands, Bool };

// The elementwise functions of two broadcast tensors that popsim computes
// through one table: comparisons, logical and bitwise functions, maximum and
// minimum, remainders, rounded divisions, atan2, pow, prelu, and integer
// add, sub and mul. The IR's `binary_pointwise` op names an entry and
// `binary_pointwise_grad` its derivative with respect to one operand; the
// kernels, the gradient rule, the lowerings (frontend/lowerings/binary.cpp)
// and the tests read this table; the float formulas are in binary_formulas.h.
struct BinaryFunction {
  std::string_view name;
  BinaryResult result;
  // Float operands, in double precision, rounded to float32 (or to bool: non-zero).
  double (*value)(double a, double b);
  // Integer and bool operands, exactly; nullptr when PyTorch computes the
  // function in floating point only (atan2).
  int64_t (*integerValue)(int64_t a, int64_t b);
  // d/da and d/db at (a, b); nullptr where the gradient is zero (rounded
  // divisions) or the result is not differentiable (comparisons).
  double (*derivativeA)(double a, double b);
  double (*derivativeB)(double a, double b);
  // Integer division by zero is an error, as in PyTorch.
  bool dividesIntegers = false;
  // The position of the float formula in BinaryFormulas<M>::all (which
  // vectorised kernels instantiate for their own types), or kNoFormula.
  size_t formula;
};

constexpr size_t kNoFormula = ~size_t{0};

// The entry named `name`, or nullptr.
const BinaryFunction* findBinaryFunction(std::string_view name);
const std::vector<BinaryFunction>& binaryFunctions();

} // namespace popsim::ir
