#include "runtime/host_copies.h"

#include "common/float16.h"
#include "kernels/half_rounding.h"

#include <cstring>

namespace popsim::runtime {
namespace {

template <typename T> void accumulate(void* destination, const void* source, int64_t count) {
  auto* out = static_cast<T*>(destination);
  const auto* in = static_cast<const T*>(source);
  for (int64_t i = 0; i < count; ++i) {
    out[i] += in[i];
  }
}

} // namespace

void copyToDevice(void* device, const void* host, const ir::TensorType& type) {
  const auto count = static_cast<size_t>(type.numel());
  if (type.dtype == ir::DType::Float16) {
    kernels::halfToFloat(static_cast<const uint16_t*>(host), static_cast<float*>(device), count);
  } else if (count != 0) {
    std::memcpy(device, host, type.bytes());
  }
}

void copyToHost(void* host, const void* device, const ir::TensorType& type) {
  const auto count = static_cast<size_t>(type.numel());
  if (type.dtype == ir::DType::Float16) {
    kernels::floatToHalf(static_cast<const float*>(device), static_cast<uint16_t*>(host), count);
  } else if (count != 0) {
    std::memcpy(host, device, type.bytes());
  }
}

void accumulateToHost(void* host, const void* device, const ir::TensorType& type) {
  const int64_t count = type.numel();
  switch (type.dtype) {
  case ir::DType::Float32: accumulate<float>(host, device, count); break;
  case ir::DType::Float16: {
    auto* out = static_cast<uint16_t*>(host);
    const auto* in = static_cast<const float*>(device);
    for (int64_t i = 0; i < count; ++i) {
      out[i] = floatToHalfBits(halfBitsToFloat(out[i]) + in[i]);
    }
    break;
  }
  case ir::DType::Int32: accumulate<int32_t>(host, device, count); break;
  case ir::DType::Int64: accumulate<int64_t>(host, device, count); break;
  case ir::DType::Bool: accumulate<uint8_t>(host, device, count); break;
  case ir::DType::Float64: accumulate<double>(host, device, count); break;
  }
}

} // namespace popsim::runtime
