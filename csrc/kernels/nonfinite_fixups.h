#pragma once

#include "ir/shape.h"
#include "kernels/kernel.h"

#include <memory>

namespace popsim::kernels {

// Passes that run after a oneDNN primitive whose jit kernels lose NaN or
// infinities where PyTorch keeps them (oneDNN clamps or takes max/min, which
// drop NaN). Each is one vectorisable pass over memory.

// y[i] = x[i] wherever x[i] is NaN (relu, exp: PyTorch returns the NaN).
std::unique_ptr<Kernel> nanPassThrough(const float* x, float* y, int64_t count);

// Softmax rows (along `axis` of `shape`) whose input holds NaN or +Inf become
// all NaN, as in PyTorch: its row maximum is then NaN or +Inf, and x - max is
// NaN at that element, so the row's sum, and every output, is NaN.
std::unique_ptr<Kernel> softmaxNonFiniteRows(const float* x, float* y, const ir::Shape& shape,
                                             int64_t axis);

} // namespace popsim::kernels
