#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace popsim::ir {

// The pointwise functions of one float tensor that popsim computes through
// one table: a name, the constant parameters it takes (from the aten op's
// arguments), its value and its derivative, both in double precision (then
// rounded to float, so results are within an ulp or so of PyTorch's float
// kernels). The IR's `pointwise` op and its gradient `pointwise_grad` name
// an entry; the kernels, the gradient rule, the frontend's lowerings and the
// tests all read this table, so adding a function is one formula
// (pointwise_formulas.h) and one lowering line (frontend/lowerings/pointwise.cpp).
struct PointwiseFunction {
  std::string_view name;
  std::vector<std::string_view> parameters; // in the order of the op's `params`
  double (*value)(double x, const double* params);
  // dy/dx at x; nullptr for piecewise-constant functions (floor, sign, ...),
  // whose gradient is zero, as in PyTorch.
  double (*derivative)(double x, const double* params);
  // The position of the function's formula in PointwiseFormulas<M>::all,
  // which vectorised kernels instantiate for their own types.
  size_t index;
};

// The entry named `name`, or nullptr.
const PointwiseFunction* findPointwiseFunction(std::string_view name);
const std::vector<PointwiseFunction>& pointwiseFunctions();

} // namespace popsim::ir
