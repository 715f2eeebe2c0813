#pragma once

// The text print_tensor shows for a tensor (PopTorch's ipu_print_tensor
// options), as Poplar prints it: nested brackets with each row on a line of
// its own, elements aligned to a common width and shown to `digits`
// significant digits, large tensors summarised to their edge items around
// "...".

#include <cstdint>
#include <string>
#include <vector>

namespace popsim::kernels::reference {

struct TensorTextFormat {
  int64_t summariseThreshold = 1000; // 0: never summarise
  int64_t edgeItems = 3;
  int64_t maxLineWidth = 80;        // 0: no line breaks inside a row
  int64_t digits = 4;               // significant digits; 0: no alignment, shortest form
  std::string floatFormat = "auto"; // auto, fixed, scientific, none
  std::string separator = ", ";
  std::string openBracket = "(";
  std::string closeBracket = ")";
};

// `values` in row-major order of `shape`; `integral` prints them as integers.
std::string tensorText(const std::vector<double>& values, const std::vector<int64_t>& shape,
                       bool integral, const TensorTextFormat& format);

} // namespace popsim::kernels::reference
