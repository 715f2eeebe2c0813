#include "kernels/reference/families.h"
#include "kernels/reference/fma_clones.h"

#include <cmath>
#include <vector>

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

// Statistics are taken over groups of elements: batch norm groups by channel
// (all samples and positions), layer norm by row (the trailing dimensions).
struct Groups {
  int64_t count = 0; // channels or rows
  int64_t size = 0;  // elements per group
  bool byChannel = false;
  int64_t channels = 1, spatial = 1; // batch norm layout
  // Offset of the j-th element of group g.
  int64_t offset(int64_t g, int64_t j) const {
    if (!byChannel) return g * size + j;
    const int64_t n = j / spatial;
    return (n * channels + g) * spatial + j % spatial;
  }
};

Groups groupsOf(const ir::Node& node) {
  // Input 0 is the data (forward) or its gradient (same shape).
  const ir::Shape& shape = node.input(0)->type().shape;
  Groups groups;
  if (node.kind() == ir::OpKind::BatchNormTrain || node.kind() == ir::OpKind::BatchNormGrad) {
    groups.byChannel = true;
    groups.channels = shape[1];
    for (size_t d = 2; d < shape.size(); ++d)
      groups.spatial *= shape[d];
    groups.count = shape[1];
    groups.size = shape[0] * groups.spatial;
  } else {
    const int64_t ndim = node.attrs().getInt("normalized_ndim");
    groups.size = 1;
    for (size_t d = shape.size() - static_cast<size_t>(ndim); d < shape.size(); ++d)
      groups.size *= shape[d];
    groups.count = ir::elementCount(shape) / groups.size;
  }
  return groups;
}

// Layer norm's (Y, mean, var) from each row's statistics (biased variance).
void layerNormTraining(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* weight = static_cast<const float*>(inputs[1]);
  const auto* bias = static_cast<const float*>(inputs[2]);
  auto* y = static_cast<float*>(outputs[0]);
  auto* meanOut = static_cast<float*>(outputs[1]);
  auto* varOut = static_cast<float*>(outputs[2]);
  const double eps = node.attrs().getFloat("eps");
  const Groups groups = groupsOf(node);
  for (int64_t g = 0; g < groups.count; ++g) {
    double mean = 0.0;
    for (int64_t j = 0; j < groups.size; ++j)
      mean += x[groups.offset(g, j)];
    mean /= static_cast<double>(groups.size);
    double var = 0.0;
    for (int64_t j = 0; j < groups.size; ++j) {
      const double d = x[groups.offset(g, j)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(groups.size);
    const double invStd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(g, j);
      y[at] = static_cast<float>((x[at] - mean) * invStd * weight[j] + bias[j]);
    }
    meanOut[g] = static_cast<float>(mean);
    varOut[g] = static_cast<float>(var);
  }
}

// Batch norm with batch statistics, as PyTorch's CPU kernels compute it
// (ATen's batch_norm_cpu_collect_stats / transform_input): sums in double,
// the mean rounded to float before the variance, then y = fma(x, alpha, beta)
// with float alpha = invstd * w and beta = fma(-mean, alpha, b) (ATen's
// kernels for AVX2 and up compile these multiply-adds fused). Batch norm over few values per
// channel amplifies rounding differences, so popsim follows PyTorch's order rather than a more
// accurate one.
POPSIM_FMA_CLONES void batchNormTraining(const ir::Node& node, const Inputs& inputs,
                                         const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* weight = static_cast<const float*>(inputs[1]);
  const auto* bias = static_cast<const float*>(inputs[2]);
  auto* y = static_cast<float*>(outputs[0]);
  auto* meanOut = static_cast<float*>(outputs[1]);
  auto* varOut = static_cast<float*>(outputs[2]);
  const double eps = node.attrs().getFloat("eps");
  const Groups groups = groupsOf(node);
  for (int64_t c = 0; c < groups.count; ++c) {
    double sum = 0.0;
    for (int64_t j = 0; j < groups.size; ++j)
      sum += x[groups.offset(c, j)];
    const float mean = static_cast<float>(sum / static_cast<double>(groups.size));
    double varSum = 0.0;
    for (int64_t j = 0; j < groups.size; ++j) {
      const float centered = x[groups.offset(c, j)] - mean;
      varSum += centered * centered;
    }
    // ATen keeps the variance sum in a float tensor and divides it in float.
    const float var = static_cast<float>(varSum) / static_cast<float>(groups.size);
    const float invStd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var) + eps));
    const float alpha = invStd * weight[c];
    const float beta = std::fma(-mean, alpha, bias[c]);
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(c, j);
      y[at] = std::fma(x[at], alpha, beta);
    }
    meanOut[c] = mean;
    varOut[c] = var;
  }
}

// Batch norm's gradient in PyTorch's CPU backward order: sums of dY and
// (x - mean) * dY (in double here; ATen sums in vectorised float, whose order
// depends on the CPU), then in float k = dotp * invstd^2 / N and
// dX = ((dY - sum / N - (x - mean) * k) * invstd) * w.
void batchNormGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* x = static_cast<const float*>(inputs[1]);
  const auto* weight = static_cast<const float*>(inputs[2]);
  const auto* mean = static_cast<const float*>(inputs[3]);
  const auto* var = static_cast<const float*>(inputs[4]);
  auto* dx = static_cast<float*>(outputs[0]);
  auto* dweight = static_cast<float*>(outputs[1]);
  auto* dbias = static_cast<float*>(outputs[2]);
  const double eps = node.attrs().getFloat("eps");
  const Groups groups = groupsOf(node);
  const float count = static_cast<float>(groups.size);
  for (int64_t c = 0; c < groups.count; ++c) {
    const float invStd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var[c]) + eps));
    double sum = 0.0;
    double dotp = 0.0;
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(c, j);
      sum += dy[at];
      dotp += (x[at] - mean[c]) * dy[at];
    }
    const float k = static_cast<float>(dotp) * invStd * invStd / count;
    const float gradMean = static_cast<float>(sum) / count;
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(c, j);
      const float projection = (x[at] - mean[c]) * k;
      dx[at] = (dy[at] - gradMean - projection) * invStd * weight[c];
    }
    dweight[c] = static_cast<float>(dotp) * invStd;
    dbias[c] = static_cast<float>(sum);
  }
}

// Layer norm's (dX, dweight, dbias) given the forward statistics:
// dX = invstd * (dY*w - mean(dY*w) - xhat * mean(dY*w*xhat)) within a row,
// dweight = sum(dY * xhat), dbias = sum(dY) over the rows.
void layerNormGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* x = static_cast<const float*>(inputs[1]);
  const auto* weight = static_cast<const float*>(inputs[2]);
  const auto* mean = static_cast<const float*>(inputs[3]);
  const auto* var = static_cast<const float*>(inputs[4]);
  auto* dx = static_cast<float*>(outputs[0]);
  const double eps = node.attrs().getFloat("eps");
  const Groups groups = groupsOf(node);
  const int64_t parameters = node.output(1)->type().numel();
  std::vector<double> dweight(static_cast<size_t>(parameters), 0.0);
  std::vector<double> dbias(static_cast<size_t>(parameters), 0.0);
  for (int64_t g = 0; g < groups.count; ++g) {
    const double invStd = 1.0 / std::sqrt(static_cast<double>(var[g]) + eps);
    double sumDyW = 0.0;
    double sumDyWXhat = 0.0;
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(g, j);
      const double xhat = (x[at] - static_cast<double>(mean[g])) * invStd;
      const double dyw = static_cast<double>(dy[at]) * weight[j];
      sumDyW += dyw;
      sumDyWXhat += dyw * xhat;
      dweight[static_cast<size_t>(j)] += dy[at] * xhat;
      dbias[static_cast<size_t>(j)] += dy[at];
    }
    const double count = static_cast<double>(groups.size);
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(g, j);
      const double xhat = (x[at] - static_cast<double>(mean[g])) * invStd;
      dx[at] = static_cast<float>(invStd * (static_cast<double>(dy[at]) * weight[j] -
                                            sumDyW / count - xhat * sumDyWXhat / count));
    }
  }
  for (int64_t i = 0; i < parameters; ++i) {
    static_cast<float*>(outputs[1])[i] = static_cast<float>(dweight[static_cast<size_t>(i)]);
    static_cast<float*>(outputs[2])[i] = static_cast<float>(dbias[static_cast<size_t>(i)]);
  }
}

} // namespace

void normalization(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  auto* y = static_cast<float*>(outputs[0]);
  switch (node.kind()) {
  case ir::OpKind::BatchNorm: return batchNorm(node, inputs, y);
  case ir::OpKind::LayerNorm: return layerNorm(node, inputs, y);
  case ir::OpKind::BatchNormTrain: return batchNormTraining(node, inputs, outputs);
  case ir::OpKind::LayerNormTrain: return layerNormTraining(node, inputs, outputs);
  case ir::OpKind::BatchNormGrad: return batchNormGrad(node, inputs, outputs);
  default: return layerNormGrad(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
