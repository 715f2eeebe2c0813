#include "kernels/reference/families.h"

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

// Affine parameters are per channel (batch norm) or per element of a row (layer norm).
int64_t affineIndex(const Groups& groups, int64_t g, int64_t j) { return groups.byChannel ? g : j; }

// (Y, mean, var) from the batch's or row's own statistics (biased variance).
void normalizeTraining(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
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
      const int64_t a = affineIndex(groups, g, j);
      y[at] = static_cast<float>((x[at] - mean) * invStd * weight[a] + bias[a]);
    }
    meanOut[g] = static_cast<float>(mean);
    varOut[g] = static_cast<float>(var);
  }
}

// (dX, dweight, dbias) given the forward statistics:
// dX = invstd * (dY*w - mean(dY*w) - xhat * mean(dY*w*xhat)) within a group,
// dweight = sum(dY * xhat), dbias = sum(dY) over the groups sharing a parameter.
void normalizeGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
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
      const int64_t a = affineIndex(groups, g, j);
      const double xhat = (x[at] - static_cast<double>(mean[g])) * invStd;
      const double dyw = static_cast<double>(dy[at]) * weight[a];
      sumDyW += dyw;
      sumDyWXhat += dyw * xhat;
      dweight[static_cast<size_t>(a)] += dy[at] * xhat;
      dbias[static_cast<size_t>(a)] += dy[at];
    }
    const double count = static_cast<double>(groups.size);
    for (int64_t j = 0; j < groups.size; ++j) {
      const int64_t at = groups.offset(g, j);
      const int64_t a = affineIndex(groups, g, j);
      const double xhat = (x[at] - static_cast<double>(mean[g])) * invStd;
      dx[at] = static_cast<float>(invStd * (static_cast<double>(dy[at]) * weight[a] -
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
  case ir::OpKind::BatchNormTrain:
  case ir::OpKind::LayerNormTrain: return normalizeTraining(node, inputs, outputs);
  default: return normalizeGrad(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
