#pragma once

#include "ir/attributes.h"
#include "ir/tensor_type.h"

#include <vector>

namespace popsim::ir::ops {

// The output type of a convolution of inputs {input, weight[, bias]} with
// the attributes stride, padding, dilation and groups (convolution.cpp);
// the gradient ops check their shapes against it.
std::vector<TensorType> inferConvolution(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs);

} // namespace popsim::ir::ops
