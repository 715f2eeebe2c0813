#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

namespace popsim::kernels::reference {
namespace {

// Running sums along the axis, accumulated as PyTorch's CPU kernel does
// (double for floats, int64 for integers), from the end when reversed.
template <typename T, typename Accumulator>
void runningSums(const T* x, T* y, const AxisSplit& s, bool reverse) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t base = o * s.size * s.inner + i;
      Accumulator sum = 0;
      for (int64_t step = 0; step < s.size; ++step) {
        const int64_t k = reverse ? s.size - 1 - step : step;
        sum += static_cast<Accumulator>(x[base + k * s.inner]);
        y[base + k * s.inner] = static_cast<T>(sum);
      }
    }
  }
}

} // namespace

void scan(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::TensorType& type = node.input(0)->type();
  const AxisSplit s = splitAroundAxis(type.shape, node.attrs().getInt("dim"));
  const bool reverse = node.attrs().getBool("reverse");
  if (type.dtype == ir::DType::Int64) {
    return runningSums<int64_t, int64_t>(static_cast<const int64_t*>(inputs[0]),
                                         static_cast<int64_t*>(outputs[0]), s, reverse);
  }
  runningSums<float, double>(static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]),
                             s, reverse);
}

} // namespace popsim::kernels::reference
