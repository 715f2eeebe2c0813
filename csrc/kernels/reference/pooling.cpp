#include "ir/ops/pooling_geometry.h"
#include "kernels/reference/chained_sum.h"
#include "kernels/reference/families.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace popsim::kernels::reference {
namespace {

struct Planes {
  int64_t count; // N x C
  int64_t H, W, OH, OW;
};

Planes planesOf(const ir::Node& node) {
  const ir::Shape& xs = node.input(0)->type().shape;
  const ir::Shape& ys = node.output(0)->type().shape;
  return {xs[0] * xs[1], xs[2], xs[3], ys[2], ys[3]};
}

void maxPool(const ir::Node& node, const float* x, float* y) {
  const Planes p = planesOf(node);
  const auto& kernel = node.attrs().getInts("kernel");
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* in = x + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < kernel[0]; ++kh) {
          const int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
          if (ih < 0 || ih >= p.H) continue;
          for (int64_t kw = 0; kw < kernel[1]; ++kw) {
            const int64_t iw = ow * stride[1] - padding[1] + kw * dilation[1];
            if (iw < 0 || iw >= p.W) continue;
            const float value = in[ih * p.W + iw];
            best = (value > best || std::isnan(value)) ? value : best; // NaN wins, as in PyTorch
          }
        }
        *y++ = best;
      }
    }
  }
}

// One avg_pool2d window as PyTorch computes it: clipped to the padded input
// for count_include_pad, to the input for the sum; divisor_override wins.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

class AvgWindows {
public:
  AvgWindows(const ir::Node& node, const Planes& planes)
      : p_(planes), kernel_(node.attrs().getInts("kernel")),
        stride_(node.attrs().getInts("stride")), padding_(node.attrs().getInts("padding")),
        includePad_(node.attrs().getBool("count_include_pad")),
        divisorOverride_(node.attrs().getInt("divisor_override")) {}

  AvgWindow at(int64_t oh, int64_t ow) const {
    AvgWindow w{oh * stride_[0] - padding_[0], 0, ow * stride_[1] - padding_[1], 0, 0};
    w.h1 = std::min(w.h0 + kernel_[0], p_.H + padding_[0]);
    w.w1 = std::min(w.w0 + kernel_[1], p_.W + padding_[1]);
    const int64_t paddedCount = (w.h1 - w.h0) * (w.w1 - w.w0);
    w.h0 = std::max<int64_t>(w.h0, 0);
    w.w0 = std::max<int64_t>(w.w0, 0);
    w.h1 = std::min(w.h1, p_.H);
    w.w1 = std::min(w.w1, p_.W);
    w.divisor = divisorOverride_ > 0 ? divisorOverride_
                : includePad_        ? paddedCount
                                     : (w.h1 - w.h0) * (w.w1 - w.w0);
    return w;
  }

private:
  Planes p_;
  std::vector<int64_t> kernel_, stride_, padding_;
  bool includePad_;
  int64_t divisorOverride_;
};

void avgPool(const ir::Node& node, const float* x, float* y) {
  const Planes p = planesOf(node);
  const AvgWindows windows(node, p);
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* in = x + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const AvgWindow w = windows.at(oh, ow);
        double sum = 0.0;
        for (int64_t ih = w.h0; ih < w.h1; ++ih) {
          for (int64_t iw = w.w0; iw < w.w1; ++iw) {
            sum += in[ih * p.W + iw];
          }
        }
        *y++ = w.divisor > 0 ? static_cast<float>(sum / static_cast<double>(w.divisor)) : 0.0f;
      }
    }
  }
}

// One adaptive pooling bin of an output plane: rows [h0, h1), columns [w0, w1).
struct Bin {
  int64_t h0, h1, w0, w1;
};

// visit(plane, bin) for every plane and every bin, in output order.
template <typename Visit> void forEachBin(const Planes& p, Visit visit) {
  for (int64_t plane = 0; plane < p.count; ++plane) {
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        visit(plane, Bin{ir::adaptiveBinStart(oh, p.OH, p.H), ir::adaptiveBinEnd(oh, p.OH, p.H),
                         ir::adaptiveBinStart(ow, p.OW, p.W), ir::adaptiveBinEnd(ow, p.OW, p.W)});
      }
    }
  }
}

void adaptiveAvgPool(const ir::Node& node, const float* x, float* y) {
  const Planes p = planesOf(node);
  forEachBin(p, [&](int64_t plane, const Bin& b) {
    const float* in = x + plane * p.H * p.W;
    double sum = 0.0;
    if (b.w0 == 0 && b.w1 == p.W) { // whole rows: one contiguous run
      sum = chainedSum<double>(in + b.h0 * p.W, (b.h1 - b.h0) * p.W);
    } else {
      for (int64_t ih = b.h0; ih < b.h1; ++ih)
        sum += chainedSum<double>(in + ih * p.W + b.w0, b.w1 - b.w0);
    }
    *y++ = static_cast<float>(sum / static_cast<double>((b.h1 - b.h0) * (b.w1 - b.w0)));
  });
}

// The outputs `ow` in [0, OW) whose window column `ow * stride + offset`
// lies inside [0, W).
std::pair<int64_t, int64_t> columnsInside(int64_t offset, int64_t stride, int64_t W, int64_t OW) {
  const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = offset > W - 1 ? -1 : (W - 1 - offset) / stride; // inclusive
  return {std::min(first, OW), std::clamp<int64_t>(last + 1, 0, OW)};
}

// Y and, per window, the flat position (ih * W + iw) of its first maximum, as
// PyTorch's max_pool2d_with_indices picks it scanning rows then columns (NaN
// wins). One output row at a time, window position by window position, so
// the inner loop runs over outputs without bounds checks or unpredictable
// branches.
void maxPoolTrain(const ir::Node& node, const float* x, float* y, int32_t* indices) {
  const Planes p = planesOf(node);
  const auto& kernel = node.attrs().getInts("kernel");
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  std::vector<int32_t> where(static_cast<size_t>(p.OW));
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* in = x + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      std::fill(y, y + p.OW, -std::numeric_limits<float>::infinity());
      std::fill(where.begin(), where.end(), -1);
      for (int64_t kh = 0; kh < kernel[0]; ++kh) {
        const int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
        if (ih < 0 || ih >= p.H) continue;
        for (int64_t kw = 0; kw < kernel[1]; ++kw) {
          const int64_t offset = kw * dilation[1] - padding[1];
          const auto [first, end] = columnsInside(offset, stride[1], p.W, p.OW);
          const float* row = in + ih * p.W + offset;
          for (int64_t ow = first; ow < end; ++ow) {
            const float value = row[ow * stride[1]];
            const bool take = (value > y[ow]) | (value != value) | (where[ow] < 0);
            y[ow] = take ? value : y[ow];
            where[ow] = take ? static_cast<int32_t>(ih * p.W + offset + ow * stride[1]) : where[ow];
          }
        }
      }
      std::copy(where.begin(), where.end(), indices);
      y += p.OW;
      indices += p.OW;
    }
  }
}

// Y and the flat position of each adaptive bin's maximum, the first in
// row-major order (NaN wins, the last one), as PyTorch's CPU kernel picks it.
void adaptiveMaxPool(const ir::Node& node, const float* x, float* y, int32_t* indices) {
  const Planes p = planesOf(node);
  forEachBin(p, [&](int64_t plane, const Bin& b) {
    const float* in = x + plane * p.H * p.W;
    int64_t where = b.h0 * p.W + b.w0;
    for (int64_t ih = b.h0; ih < b.h1; ++ih) {
      for (int64_t iw = b.w0; iw < b.w1; ++iw) {
        const float value = in[ih * p.W + iw];
        if (value > in[where] || std::isnan(value)) where = ih * p.W + iw;
      }
    }
    *y++ = in[where];
    *indices++ = static_cast<int32_t>(where);
  });
}

// dX: each dY element added at its window's recorded maximum, in output
// order (PyTorch's order where windows overlap).
void maxPoolGrad(const ir::Node& node, const float* dy, const int32_t* indices, float* dx) {
  const auto& xs = node.attrs().getInts("input_shape");
  const ir::Shape& ys = node.input(0)->type().shape;
  const int64_t planes = xs[0] * xs[1];
  const int64_t inPlane = xs[2] * xs[3];
  const int64_t outPlane = ys[2] * ys[3];
  std::fill(dx, dx + node.output()->type().numel(), 0.0f);
  for (int64_t plane = 0; plane < planes; ++plane) {
    float* grad = dx + plane * inPlane;
    for (int64_t i = 0; i < outPlane; ++i) {
      if (indices[i] >= 0) grad[indices[i]] += dy[i];
    }
    dy += outPlane;
    indices += outPlane;
  }
}

// dX: each window's dY divided by the divisor the forward pass used, spread
// over the window's input positions.
void avgPoolGrad(const ir::Node& node, const float* dy, float* dx) {
  const auto& xs = node.attrs().getInts("input_shape");
  const ir::Shape& ys = node.input(0)->type().shape;
  const Planes p{xs[0] * xs[1], xs[2], xs[3], ys[2], ys[3]};
  const AvgWindows windows(node, p);
  std::fill(dx, dx + node.output()->type().numel(), 0.0f);
  for (int64_t plane = 0; plane < p.count; ++plane) {
    float* grad = dx + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const AvgWindow w = windows.at(oh, ow);
        const float share = w.divisor > 0 ? *dy / static_cast<float>(w.divisor) : 0.0f;
        for (int64_t ih = w.h0; ih < w.h1; ++ih) {
          for (int64_t iw = w.w0; iw < w.w1; ++iw) {
            grad[ih * p.W + iw] += share;
          }
        }
        ++dy;
      }
    }
  }
}

void adaptiveAvgPoolGrad(const ir::Node& node, const float* dy, float* dx) {
  const auto& xs = node.attrs().getInts("input_shape");
  const ir::Shape& ys = node.input(0)->type().shape;
  const Planes p{xs[0] * xs[1], xs[2], xs[3], ys[2], ys[3]};
  std::fill(dx, dx + node.output()->type().numel(), 0.0f);
  forEachBin(p, [&](int64_t plane, const Bin& b) {
    float* grad = dx + plane * p.H * p.W;
    const float share = *dy++ / static_cast<float>((b.h1 - b.h0) * (b.w1 - b.w0));
    for (int64_t ih = b.h0; ih < b.h1; ++ih) {
      for (int64_t iw = b.w0; iw < b.w1; ++iw) {
        grad[ih * p.W + iw] += share;
      }
    }
  });
}

} // namespace

void pooling(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  switch (node.kind()) {
  case ir::OpKind::MaxPool2d: return maxPool(node, x, y);
  case ir::OpKind::AvgPool2d: return avgPool(node, x, y);
  case ir::OpKind::MaxPool2dTrain:
    return maxPoolTrain(node, x, y, static_cast<int32_t*>(outputs[1]));
  case ir::OpKind::MaxPool2dGrad:
    return maxPoolGrad(node, x, static_cast<const int32_t*>(inputs[1]), y);
  case ir::OpKind::AvgPool2dGrad: return avgPoolGrad(node, x, y);
  case ir::OpKind::AdaptiveAvgPool2dGrad: return adaptiveAvgPoolGrad(node, x, y);
  case ir::OpKind::AdaptiveMaxPool2d:
    return adaptiveMaxPool(node, x, y, static_cast<int32_t*>(outputs[1]));
  default: return adaptiveAvgPool(node, x, y);
  }
}

} // namespace popsim::kernels::reference
