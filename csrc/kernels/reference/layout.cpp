#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace popsim::kernels::reference {
namespace {

// Copies elements of `size` bytes from `src` at the given strides (in
// elements) to a contiguous `dst` of `shape`.
void stridedCopy(const uint8_t* src, const std::vector<int64_t>& strides, const ir::Shape& shape,
                 size_t size, uint8_t* dst) {
  forEachIndex(shape, [&](const std::vector<int64_t>& index) {
    std::memcpy(dst, src + dot(index, strides) * static_cast<int64_t>(size), size);
    dst += size;
  });
}

// Copies a contiguous `source` of `sliceShape` into the positions of the
// slice (dim, start, step from the node) of a contiguous `dst` of `shape`.
void copyIntoSlice(const ir::Node& node, const uint8_t* source, const ir::Shape& sliceShape,
                   size_t size, const ir::Shape& shape, uint8_t* dst) {
  const int64_t dim = node.attrs().getInt("dim");
  const std::vector<int64_t> dstStrides = ir::contiguousStrides(shape);
  std::vector<int64_t> strides = dstStrides;
  strides[dim] *= node.attrs().getInt("step");
  uint8_t* start =
      dst + node.attrs().getInt("start") * dstStrides[dim] * static_cast<int64_t>(size);
  forEachIndex(sliceShape, [&](const std::vector<int64_t>& index) {
    std::memcpy(start + dot(index, strides) * static_cast<int64_t>(size), source, size);
    source += size;
  });
}

// One element converted as PyTorch converts on x86-64: floats to integers
// truncate toward zero, and NaN or out-of-range values give the type's
// minimum (the processor's "integer indefinite"); integers narrow by
// wrapping; anything non-zero is true.
template <typename From, typename To> To convertElement(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    const double x = static_cast<double>(value);
    const double limit = std::ldexp(1.0, std::numeric_limits<To>::digits); // 2^31 or 2^63
    if (!(x > -limit - 1.0 && x < limit)) return std::numeric_limits<To>::min();
    return static_cast<To>(x);
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    return static_cast<To>(static_cast<std::make_unsigned_t<To>>(value)); // wraps
  } else {
    return static_cast<To>(value);
  }
}

template <typename From, typename To> void convertAll(const void* in, void* out, int64_t count) {
  const auto* source = static_cast<const From*>(in);
  auto* target = static_cast<To*>(out);
  for (int64_t i = 0; i < count; ++i)
    target[i] = convertElement<From, To>(source[i]);
}

template <typename From> void castFrom(const void* in, ir::DType to, void* out, int64_t count) {
  switch (to) {
  case ir::DType::Float32:
  case ir::DType::Float16: return convertAll<From, float>(in, out, count);
  case ir::DType::Int32: return convertAll<From, int32_t>(in, out, count);
  case ir::DType::Int64: return convertAll<From, int64_t>(in, out, count);
  case ir::DType::Bool: return convertAll<From, bool>(in, out, count);
  case ir::DType::Float64: return convertAll<From, double>(in, out, count);
  }
}

void cast(ir::DType from, const void* in, ir::DType to, void* out, int64_t count) {
  switch (from) {
  case ir::DType::Float32:
  case ir::DType::Float16: return castFrom<float>(in, to, out, count);
  case ir::DType::Int32: return castFrom<int32_t>(in, to, out, count);
  case ir::DType::Int64: return castFrom<int64_t>(in, to, out, count);
  case ir::DType::Bool: return castFrom<bool>(in, to, out, count);
  case ir::DType::Float64: return castFrom<double>(in, to, out, count);
  }
}

} // namespace

void layout(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const uint8_t*>(inputs[0]);
  auto* y = static_cast<uint8_t*>(outputs[0]);
  const ir::TensorType& inType = node.input(0)->type();
  const ir::Shape& outShape = node.output()->type().shape;
  const size_t size = ir::storageSize(inType.dtype);
  const std::vector<int64_t> inStrides = ir::contiguousStrides(inType.shape);
  switch (node.kind()) {
  case ir::OpKind::Reshape:
  case ir::OpKind::StopGradient:
    if (x != y) {
      std::memmove(y, x, inType.storageBytes());
    }
    return;
  case ir::OpKind::Permute: {
    const auto& perm = node.attrs().getInts("perm");
    std::vector<int64_t> strides(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      strides[i] = inStrides[perm[i]];
    }
    return stridedCopy(x, strides, outShape, size, y);
  }
  case ir::OpKind::Slice: {
    const int64_t dim = node.attrs().getInt("dim");
    std::vector<int64_t> strides = inStrides;
    strides[dim] *= node.attrs().getInt("step");
    const uint8_t* start =
        x + node.attrs().getInt("start") * inStrides[dim] * static_cast<int64_t>(size);
    return stridedCopy(start, strides, outShape, size, y);
  }
  case ir::OpKind::Concat: {
    // Each input contributes a block of (its size along dim x inner) per outer index.
    const int64_t dim = node.attrs().getInt("dim");
    const AxisSplit out = splitAroundAxis(outShape, dim);
    int64_t offset = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t block =
          node.input(i)->type().shape[dim] * out.inner * static_cast<int64_t>(size);
      const auto* src = static_cast<const uint8_t*>(inputs[i]);
      for (int64_t o = 0; o < out.outer; ++o) {
        std::memcpy(y + o * out.size * out.inner * static_cast<int64_t>(size) + offset,
                    src + o * block, static_cast<size_t>(block));
      }
      offset += block;
    }
    return;
  }
  case ir::OpKind::Broadcast:
    return stridedCopy(x, broadcastStrides(inType.shape, outShape), outShape, size, y);
  case ir::OpKind::SliceGrad:
    // Zeros, then the gradient copied into the sliced positions.
    std::memset(y, 0, node.output()->type().storageBytes());
    return copyIntoSlice(node, x, inType.shape, size, outShape, y);
  case ir::OpKind::Overwrite:
    if (inputs[1] != y) {
      std::memmove(y, inputs[1], inType.storageBytes());
    }
    return;
  case ir::OpKind::Cast:
    return cast(inType.dtype, x, node.output()->type().dtype, y, inType.numel());
  case ir::OpKind::SliceUpdate:
    if (x != y) {
      std::memmove(y, x, inType.storageBytes());
    }
    return copyIntoSlice(node, static_cast<const uint8_t*>(inputs[1]), node.input(1)->type().shape,
                         size, outShape, y);
  default: POPSIM_ASSERT(false, node.name(), " is not a layout op.");
  }
}

} // namespace popsim::kernels::reference
