#include "kernels/reference/families.h"
#include "kernels/reference/random_bits.h"

namespace popsim::kernels::reference {

// dropout(X, counter) -> (Y, mask). Each element keeps its value scaled by
// 1/(1-p) with probability 1-p; the draw is a hash of (seed, stream, counter,
// element index), so a program run with the same seed repeats its masks and
// every micro-batch (counter) and dropout op (stream) gets fresh ones.
void dropout(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const int64_t counter = *static_cast<const int64_t*>(inputs[1]);
  auto* y = static_cast<float*>(outputs[0]);
  auto* mask = static_cast<float*>(outputs[1]);
  const double p = node.attrs().getFloat("p");
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  const uint64_t seed = static_cast<uint64_t>(node.attrs().getInt("seed"));
  const uint64_t stream = static_cast<uint64_t>(node.attrs().getInt("stream"));
  for (int64_t i = 0; i < node.output()->type().numel(); ++i) {
    const double u =
        uniformBits(seed, stream, static_cast<uint64_t>(counter), static_cast<uint64_t>(i));
    mask[i] = u < p ? 0.0f : keep;
    y[i] = x[i] * mask[i];
  }
}

} // namespace popsim::kernels::reference
