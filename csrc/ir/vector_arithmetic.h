#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace popsim::ir {

// The arithmetic a tile's vector unit does per element in one elementwise
// vertex, as the operations PopLibs' vertex cycle estimates price
// (costs/vector_cycles.cpp gives their cycles). An elementwise function on
// the IPU is one vertex (a popnn non-linearity, or a fused popops
// expression) that loads each element, runs its operations and stores the
// result, so it costs the load and store once and each operation's cycles.
enum class VectorOp : uint8_t {
  Plain,      // add, subtract, multiply, negate, absolute value
  Compare,    // maximum, minimum, comparisons and selects
  Divide,     // x / y
  Reciprocal, // 1 / x
  Exp,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Sigmoid,
  Tanh,
  Erf,
  SinCos, // sine or cosine
  Tan,
  Asin, // the inverse trigonometric functions
  Power,
  Atan2,
  Remainder, // fmod, remainder
  Round,     // floor, ceil, round, trunc
  Sign,
  Gelu, // popnn's GELU non-linearity, one vertex
};
inline constexpr size_t kVectorOpCount = static_cast<size_t>(VectorOp::Gelu) + 1;

// The operations one element takes, in any order (repeats count).
using VectorArithmetic = std::vector<VectorOp>;

// An elementwise function's value, and its gradient: the derivative times
// the incoming gradient, with respect to each operand (a unary function's
// second entry is unused; empty where the gradient is zero).
struct ElementwiseArithmetic {
  VectorArithmetic value;
  std::array<VectorArithmetic, 2> gradient;
};

// The arithmetic of the pointwise functions (pointwise_functions.h) and the
// binary functions (binary_functions.h): every function of those tables has
// an entry (a test checks); an unknown name is an internal error.
const ElementwiseArithmetic& pointwiseArithmetic(std::string_view function);
const ElementwiseArithmetic& binaryArithmetic(std::string_view function);
// activation_grad's: the gradient of relu, sigmoid, tanh, gelu, gelu_tanh or abs.
const VectorArithmetic& activationGradientArithmetic(std::string_view activation);

} // namespace popsim::ir
