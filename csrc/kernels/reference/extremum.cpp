#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <string>

namespace popsim::kernels::reference {
namespace {

// PyTorch's order for max and min: NaN beats every number (the first NaN
// wins), otherwise strictly larger (smaller) values replace the best so far,
// so the first of equal extrema is kept.
struct Order {
  bool max;
  bool better(float v, float best) const {
    return best == best && (v != v || (max ? v > best : v < best));
  }
};

// Position (0..size-1) of the first extremum of one slice.
int64_t firstExtremum(const float* x, int64_t size, int64_t inner, Order order) {
  int64_t best = 0;
  for (int64_t k = 1; k < size; ++k) {
    if (order.better(x[k * inner], x[best * inner])) best = k;
  }
  return best;
}

} // namespace

// reduce_extremum, reduce_extremum_grad and arg_extremum along one dimension.
void extremum(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const bool gradient = node.kind() == ir::OpKind::ReduceExtremumGrad;
  const auto* x = static_cast<const float*>(inputs[gradient ? 1 : 0]);
  const Order order{node.attrs().getString("function") == "max"};
  const AxisSplit s =
      splitAroundAxis(node.input(gradient ? 1 : 0)->type().shape, node.attrs().getInt("dim"));
  const std::string ties = gradient ? node.attrs().getString("ties") : std::string();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t reduced = o * s.inner + i;
      const float* slice = x + o * s.size * s.inner + i;
      switch (node.kind()) {
      case ir::OpKind::ReduceExtremum:
        static_cast<float*>(outputs[0])[reduced] =
            slice[firstExtremum(slice, s.size, s.inner, order) * s.inner];
        break;
      case ir::OpKind::ArgExtremum:
        static_cast<int64_t*>(outputs[0])[reduced] = firstExtremum(slice, s.size, s.inner, order);
        break;
      default: {
        const float dy = static_cast<const float*>(inputs[0])[reduced];
        float* dx = static_cast<float*>(outputs[0]) + o * s.size * s.inner + i;
        if (ties == "first") { // all to the value's index
          const int64_t chosen = firstExtremum(slice, s.size, s.inner, order);
          for (int64_t k = 0; k < s.size; ++k)
            dx[k * s.inner] = k == chosen ? dy : 0.0f;
          break;
        }
        const float y = static_cast<const float*>(inputs[2])[reduced];
        if (ties == "split_nan") {
          // PyTorch's even distribution: dy / count into the elements equal
          // to the result (the NaNs for a NaN result), exact zeros elsewhere.
          const auto chosen = [&](float v) { return y != y ? v != v : v == y; };
          int64_t count = 0;
          for (int64_t k = 0; k < s.size; ++k)
            count += chosen(slice[k * s.inner]) ? 1 : 0;
          const float share = dy / static_cast<float>(count);
          for (int64_t k = 0; k < s.size; ++k)
            dx[k * s.inner] = chosen(slice[k * s.inner]) ? share : 0.0f;
          break;
        }
        // Split evenly between the elements equal to the result, as PyTorch's
        // (dy / count) * mask, which is NaN throughout a slice whose result is NaN.
        int64_t count = 0;
        for (int64_t k = 0; k < s.size; ++k)
          count += slice[k * s.inner] == y ? 1 : 0;
        const float share = dy / static_cast<float>(count);
        for (int64_t k = 0; k < s.size; ++k)
          dx[k * s.inner] = share * (slice[k * s.inner] == y ? 1.0f : 0.0f);
      }
      }
    }
  }
}

} // namespace popsim::kernels::reference
