#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace popsim::kernels::reference {
namespace {

template <typename T> bool isNaN(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// Each slice along the axis sorted stably by value, NaN above every number.
template <typename T>
void sortSlices(const T* x, T* values, int64_t* indices, const AxisSplit& s, bool descending) {
  std::vector<int64_t> order(static_cast<size_t>(s.size));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t base = o * s.size * s.inner + i;
      const auto at = [&](int64_t k) { return x[base + k * s.inner]; };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const T va = at(a), vb = at(b);
        if (descending) return (isNaN(va) && !isNaN(vb)) || va > vb;
        return (!isNaN(va) && isNaN(vb)) || va < vb;
      });
      for (int64_t k = 0; k < s.size; ++k) {
        values[base + k * s.inner] = at(order[static_cast<size_t>(k)]);
        indices[base + k * s.inner] = order[static_cast<size_t>(k)];
      }
    }
  }
}

} // namespace

void sort(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::TensorType& type = node.input(0)->type();
  const AxisSplit s = splitAroundAxis(type.shape, node.attrs().getInt("dim"));
  const bool descending = node.attrs().getBool("descending");
  auto* indices = static_cast<int64_t*>(outputs[1]);
  switch (type.dtype) {
  case ir::DType::Int64:
    return sortSlices(static_cast<const int64_t*>(inputs[0]), static_cast<int64_t*>(outputs[0]),
                      indices, s, descending);
  case ir::DType::Int32:
    return sortSlices(static_cast<const int32_t*>(inputs[0]), static_cast<int32_t*>(outputs[0]),
                      indices, s, descending);
  default:
    return sortSlices(static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]),
                      indices, s, descending);
  }
}

} // namespace popsim::kernels::reference
