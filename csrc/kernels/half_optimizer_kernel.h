#pragma once

#include "kernels/kernel.h"
#include "kernels/kernel_factory.h"

#include <memory>

namespace popsim::kernels {

// The step of an optimizer that updates each element on its own (SGD,
// Adam/AdamW, RMSprop) on float16 weights or state, with the float16
// tensors rounded a block of elements at a time right after the step writes
// the block, while it is in cache, instead of in a pass over each whole
// tensor after the step (HalfRoundingKernel): each tensor crosses memory once
// instead of three times, and the results are the same bits. Null for other
// nodes, and for steps that write no float16 tensor.
std::unique_ptr<Kernel> createHalfOptimizerKernel(const KernelRequest& request);

} // namespace popsim::kernels
