#pragma once

#include "ir/node.h"
#include "ir/pointwise_functions.h"

#include <cstdint>

// The arithmetic of the pointwise ops, shared by the reference kernel and the
// parallel one (pointwise_kernel.cpp): values and gradients in double
// precision, rounded to float.
namespace popsim::kernels::reference {

void pointwiseValues(const ir::PointwiseFunction& function, const double* params, const float* x,
                     float* y, int64_t count);
// dx = dy * f'(x).
void pointwiseGradients(const ir::PointwiseFunction& function, const double* params,
                        const float* dy, const float* x, float* dx, int64_t count);
const ir::PointwiseFunction& pointwiseFunctionOf(const ir::Node& node);
// Whether pointwiseValues computes `function` in float, which the compiler
// vectorises (clamp, hardtanh: the same values as in double).
bool hasFloatPath(const ir::PointwiseFunction& function);

} // namespace popsim::kernels::reference
