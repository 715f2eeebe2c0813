#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

// index_select, index_add, gather and scatter: elements moved by an index
// tensor along one dimension, bytes copied whatever the dtype, sums in the
// dtype (float32 or int64), in the index's order (so the last of repeated
// writes wins, as on PyTorch's CPU).
namespace popsim::kernels::reference {
namespace {

int64_t checkedIndex(int64_t value, int64_t size, int64_t position) {
  POPSIM_CHECK(value >= 0 && value < size, ErrorKind::Execution, "index ", value, " (at position ",
               position, " of the index) is out of range for a dimension of size ", size,
               "; indices must be in [0, ", size, ").");
  return value;
}

// dst[0..count) += src[0..count) in `dtype`, or = when not summing.
void combine(char* dst, const char* src, int64_t count, ir::DType dtype, bool sum) {
  if (!sum) {
    std::memcpy(dst, src, static_cast<size_t>(count) * ir::storageSize(dtype));
    return;
  }
  if (dtype == ir::DType::Int64) {
    auto* d = reinterpret_cast<int64_t*>(dst);
    const auto* s = reinterpret_cast<const int64_t*>(src);
    for (int64_t i = 0; i < count; ++i)
      d[i] = static_cast<int64_t>(static_cast<uint64_t>(d[i]) + static_cast<uint64_t>(s[i]));
    return;
  }
  auto* d = reinterpret_cast<float*>(dst);
  const auto* s = reinterpret_cast<const float*>(src);
  for (int64_t i = 0; i < count; ++i)
    d[i] += s[i];
}

void copyInput(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (outputs[0] != inputs[0])
    std::memcpy(outputs[0], inputs[0], node.input(0)->type().storageBytes());
}

// Slices of X = [outer, size, inner] along the dimension.
void indexSelect(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::TensorType& x = node.input(0)->type();
  const AxisSplit s = splitAroundAxis(x.shape, node.attrs().getInt("dim"));
  const auto* index = static_cast<const int64_t*>(inputs[1]);
  const int64_t count = node.input(1)->type().numel();
  const size_t row = static_cast<size_t>(s.inner) * ir::storageSize(x.dtype);
  const auto* src = static_cast<const char*>(inputs[0]);
  auto* dst = static_cast<char*>(outputs[0]);
  for (int64_t k = 0; k < count; ++k)
    checkedIndex(index[k], s.size, k);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      std::memcpy(dst + (o * count + k) * row, src + (o * s.size + index[k]) * row, row);
    }
  }
}

void indexAdd(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::TensorType& x = node.input(0)->type();
  const AxisSplit s = splitAroundAxis(x.shape, node.attrs().getInt("dim"));
  const auto* index = static_cast<const int64_t*>(inputs[1]);
  const int64_t count = node.input(1)->type().numel();
  const bool sum = node.attrs().getBool("accumulate");
  const size_t row = static_cast<size_t>(s.inner) * ir::storageSize(x.dtype);
  for (int64_t k = 0; k < count; ++k)
    checkedIndex(index[k], s.size, k);
  copyInput(node, inputs, outputs);
  const auto* source = static_cast<const char*>(inputs[2]);
  auto* dst = static_cast<char*>(outputs[0]);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      combine(dst + (o * s.size + index[k]) * row, source + (o * count + k) * row, s.inner, x.dtype,
              sum);
    }
  }
}

// Checks every value of I against the size of X's dimension `dim`.
void checkIndices(const ir::Node& node, const Inputs& inputs) {
  const int64_t size = node.input(0)->type().shape[static_cast<size_t>(node.attrs().getInt("dim"))];
  const auto* index = static_cast<const int64_t*>(inputs[1]);
  for (int64_t i = 0; i < node.input(1)->type().numel(); ++i)
    checkedIndex(index[i], size, i);
}

// Calls fn(position in I, offset in X with dim replaced by I's value) for
// every element of I (whose values checkIndices has checked).
template <typename Fn> void forEachTarget(const ir::Node& node, const Inputs& inputs, Fn fn) {
  const ir::TensorType& x = node.input(0)->type();
  const ir::Shape& shape = node.input(1)->type().shape;
  const int64_t dim = node.attrs().getInt("dim");
  const std::vector<int64_t> strides = ir::contiguousStrides(x.shape);
  const auto* index = static_cast<const int64_t*>(inputs[1]);
  int64_t position = 0;
  forEachIndex(shape, [&](const std::vector<int64_t>& at) {
    int64_t offset = 0;
    for (size_t d = 0; d < at.size(); ++d) {
      const int64_t i = static_cast<int64_t>(d) == dim ? index[position] : at[d];
      offset += i * strides[d];
    }
    fn(position++, offset);
  });
}

void gather(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  checkIndices(node, inputs);
  const size_t size = ir::storageSize(node.input(0)->type().dtype);
  const auto* src = static_cast<const char*>(inputs[0]);
  auto* dst = static_cast<char*>(outputs[0]);
  forEachTarget(node, inputs, [&](int64_t position, int64_t offset) {
    std::memcpy(dst + position * static_cast<int64_t>(size),
                src + offset * static_cast<int64_t>(size), size);
  });
}

void scatter(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::DType dtype = node.input(0)->type().dtype;
  const int64_t size = static_cast<int64_t>(ir::storageSize(dtype));
  const bool sum = node.attrs().getString("reduce") == "sum";
  checkIndices(node, inputs); // (before the output, which may be the input, is touched)
  copyInput(node, inputs, outputs);
  const auto* src = static_cast<const char*>(inputs[2]);
  auto* dst = static_cast<char*>(outputs[0]);
  forEachTarget(node, inputs, [&](int64_t position, int64_t offset) {
    combine(dst + offset * size, src + position * size, 1, dtype, sum);
  });
}

// scatter_reduce: each target starts from the input (include_self) or, once
// reached, from the reduction's identity; then the sources are combined in
// the index's order; mean divides by how many values met (the input counted
// with include_self). amax and amin let NaN win, as PyTorch's do.
void scatterReduce(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const std::string& reduce = node.attrs().getString("reduce");
  const bool includeSelf = node.attrs().getBool("include_self");
  checkIndices(node, inputs);
  copyInput(node, inputs, outputs);
  const auto* src = static_cast<const float*>(inputs[2]);
  auto* dst = static_cast<float*>(outputs[0]);
  std::vector<int64_t> counts(static_cast<size_t>(node.input(0)->type().numel()),
                              includeSelf ? 1 : 0);
  const float identity = reduce == "prod"   ? 1.0f
                         : reduce == "amax" ? -std::numeric_limits<float>::infinity()
                         : reduce == "amin" ? std::numeric_limits<float>::infinity()
                                            : 0.0f;
  forEachTarget(node, inputs, [&](int64_t position, int64_t offset) {
    float& target = dst[offset];
    int64_t& count = counts[static_cast<size_t>(offset)];
    if (count == 0) target = identity;
    ++count;
    const float v = src[position];
    if (reduce == "sum" || reduce == "mean") {
      target += v;
    } else if (reduce == "prod") {
      target *= v;
    } else if (reduce == "amax") {
      target = (v != v || v > target) ? v : target;
    } else {
      target = (v != v || v < target) ? v : target;
    }
  });
  if (reduce == "mean") {
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] > 1) dst[i] /= static_cast<float>(counts[i]);
    }
  }
}

} // namespace

void gatherScatter(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::IndexSelect: return indexSelect(node, inputs, outputs);
  case ir::OpKind::IndexAdd: return indexAdd(node, inputs, outputs);
  case ir::OpKind::Gather: return gather(node, inputs, outputs);
  case ir::OpKind::ScatterReduce: return scatterReduce(node, inputs, outputs);
  default: return scatter(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
