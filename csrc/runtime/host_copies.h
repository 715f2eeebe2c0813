#pragma once

#include "ir/tensor_type.h"

#include <cstdint>

// Copies between host tensors and the buffers that stand in for device
// memory. They hold the same bytes, except float16: the host has IEEE halves
// (2 bytes, as torch.float16), the device float32 carriers of them.
namespace popsim::runtime {

void copyToDevice(void* device, const void* host, const ir::TensorType& type);
void copyToHost(void* host, const void* device, const ir::TensorType& type);
// host += device, element-wise in the type (float16 sums rounded to float16).
void accumulateToHost(void* host, const void* device, const ir::TensorType& type);

} // namespace popsim::runtime
