#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <cstring>

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

} // namespace

void layout(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const uint8_t*>(inputs[0]);
  auto* y = static_cast<uint8_t*>(outputs[0]);
  const ir::TensorType& inType = node.input(0)->type();
  const ir::Shape& outShape = node.output()->type().shape;
  const size_t size = ir::elementSize(inType.dtype);
  const std::vector<int64_t> inStrides = ir::contiguousStrides(inType.shape);
  switch (node.kind()) {
  case ir::OpKind::Reshape:
  case ir::OpKind::StopGradient:
    if (x != y) {
      std::memmove(y, x, inType.bytes());
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
    std::memset(y, 0, node.output()->type().bytes());
    return copyIntoSlice(node, x, inType.shape, size, outShape, y);
  case ir::OpKind::SliceUpdate:
    if (x != y) {
      std::memmove(y, x, inType.bytes());
    }
    return copyIntoSlice(node, static_cast<const uint8_t*>(inputs[1]), node.input(1)->type().shape,
                         size, outShape, y);
  default: POPSIM_ASSERT(false, node.name(), " is not a layout op.");
  }
}

} // namespace popsim::kernels::reference
