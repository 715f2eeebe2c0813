#pragma once

#include <cstdint>
#include <string_view>

// Float forms of the binary table's simplest functions (comparisons,
// maximum and minimum, clamps, logical functions), inlined into loops the
// compiler vectorises: the table's functions are called through a pointer
// per element, which costs several times PyTorch's time on the hot
// functions of real models (masks, ReLU-like maxima). Each computes what
// the table's double-precision value gives for float32 operands, to the
// bit; kernels/fast_binary_functions_test.cpp checks it.
namespace popsim::kernels::reference {

// y[j] = f(a[j * strideA], b[j * strideB]) for j < count, with y bool for
// comparisons and logical functions, float otherwise.
using FastBinaryPiece = void (*)(const float* a, int64_t strideA, const float* b, int64_t strideB,
                                 void* y, int64_t count);

// The fast loop of the function named `name`, or nullptr.
FastBinaryPiece findFastBinaryPiece(std::string_view name);

} // namespace popsim::kernels::reference
