#include "kernels/reference/families.h"

#include <cmath>

namespace popsim::kernels::reference {
namespace {

// Inference batch norm with running statistics, per channel (dimension 1).
void batchNorm(const ir::Node& node, const Inputs& inputs, float* y) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* mean = static_cast<const float*>(inputs[1]);
  const auto* var = static_cast<const float*>(inputs[2]);
  const auto* weight = static_cast<const float*>(inputs[3]);
  const auto* bias = static_cast<const float*>(inputs[4]);
  const double eps = node.attrs().getFloat("eps");
  const ir::Shape& shape = node.input(0)->type().shape;
  const int64_t channels = shape[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < shape.size(); ++d) {
    spatial *= shape[d];
  }
  for (int64_t n = 0; n < shape[0]; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const double invStd = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
      const int64_t base = (n * channels + c) * spatial;
      for (int64_t i = 0; i < spatial; ++i) {
        y[base + i] = static_cast<float>(
            (x[base + i] - static_cast<double>(mean[c])) * invStd * weight[c] + bias[c]);
      }
    }
  }
}

// Layer norm over the trailing `normalized_ndim` dimensions, biased variance.
void layerNorm(const ir::Node& node, const Inputs& inputs, float* y) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* weight = static_cast<const float*>(inputs[1]);
  const auto* bias = static_cast<const float*>(inputs[2]);
  const double eps = node.attrs().getFloat("eps");
  const int64_t width = node.input(1)->type().numel();
  const int64_t rows = node.input(0)->type().numel() / width;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * width;
    double mean = 0.0;
    for (int64_t i = 0; i < width; ++i) {
      mean += row[i];
    }
    mean /= static_cast<double>(width);
    double var = 0.0;
    for (int64_t i = 0; i < width; ++i) {
      var += (row[i] - mean) * (row[i] - mean);
    }
    var /= static_cast<double>(width);
    const double invStd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < width; ++i) {
      y[r * width + i] = static_cast<float>((row[i] - mean) * invStd * weight[i] + bias[i]);
    }
  }
}

} // namespace

void normalization(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  auto* y = static_cast<float*>(outputs[0]);
  if (node.kind() == ir::OpKind::BatchNorm) {
    batchNorm(node, inputs, y);
  } else {
    layerNorm(node, inputs, y);
  }
}

} // namespace popsim::kernels::reference
