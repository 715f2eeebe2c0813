#include "ir/ops/pooling_geometry.h"
#include "kernels/reference/families.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace popsim::kernels::reference {
namespace {

struct Planes {
  int64_t count; // N x C
  int64_t H, W, OH, OW;
};

Planes planesOf(const ir::Node& node) {
  const ir::Shape& xs = node.input(0)->type().shape;
  const ir::Shape& ys = node.output()->type().shape;
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
            best = std::max(best, in[ih * p.W + iw]);
          }
        }
        *y++ = best;
      }
    }
  }
}

// PyTorch's avg_pool2d: windows are clipped to the padded input for
// count_include_pad, to the input for the sum, and divisor_override wins.
void avgPool(const ir::Node& node, const float* x, float* y) {
  const Planes p = planesOf(node);
  const auto& kernel = node.attrs().getInts("kernel");
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const bool includePad = node.attrs().getBool("count_include_pad");
  const int64_t divisorOverride = node.attrs().getInt("divisor_override");
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* in = x + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        int64_t h0 = oh * stride[0] - padding[0];
        int64_t w0 = ow * stride[1] - padding[1];
        int64_t h1 = std::min(h0 + kernel[0], p.H + padding[0]);
        int64_t w1 = std::min(w0 + kernel[1], p.W + padding[1]);
        const int64_t paddedCount = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, p.H);
        w1 = std::min(w1, p.W);
        double sum = 0.0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw) {
            sum += in[ih * p.W + iw];
          }
        }
        const int64_t divisor = divisorOverride > 0 ? divisorOverride
                                : includePad        ? paddedCount
                                                    : (h1 - h0) * (w1 - w0);
        *y++ = divisor > 0 ? static_cast<float>(sum / static_cast<double>(divisor)) : 0.0f;
      }
    }
  }
}

void adaptiveAvgPool(const ir::Node& node, const float* x, float* y) {
  const Planes p = planesOf(node);
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* in = x + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      const int64_t h0 = ir::adaptiveBinStart(oh, p.OH, p.H);
      const int64_t h1 = ir::adaptiveBinEnd(oh, p.OH, p.H);
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const int64_t w0 = ir::adaptiveBinStart(ow, p.OW, p.W);
        const int64_t w1 = ir::adaptiveBinEnd(ow, p.OW, p.W);
        double sum = 0.0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw) {
            sum += in[ih * p.W + iw];
          }
        }
        *y++ = static_cast<float>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
      }
    }
  }
}

// dX: each window's dY goes to the window's first maximum (as PyTorch's
// forward pass picks it when scanning rows then columns).
void maxPoolGrad(const ir::Node& node, const float* dy, const float* x, float* dx) {
  const ir::Shape& xs = node.input(1)->type().shape;
  const ir::Shape& ys = node.input(0)->type().shape;
  const Planes p{xs[0] * xs[1], xs[2], xs[3], ys[2], ys[3]};
  const auto& kernel = node.attrs().getInts("kernel");
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  std::fill(dx, dx + node.output()->type().numel(), 0.0f);
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* in = x + plane * p.H * p.W;
    float* grad = dx + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t where = -1;
        for (int64_t kh = 0; kh < kernel[0]; ++kh) {
          const int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
          if (ih < 0 || ih >= p.H) continue;
          for (int64_t kw = 0; kw < kernel[1]; ++kw) {
            const int64_t iw = ow * stride[1] - padding[1] + kw * dilation[1];
            if (iw < 0 || iw >= p.W) continue;
            const float value = in[ih * p.W + iw];
            if (where < 0 || value > best || std::isnan(value)) {
              best = value;
              where = ih * p.W + iw;
            }
          }
        }
        if (where >= 0) {
          grad[where] += *dy;
        }
        ++dy;
      }
    }
  }
}

// dX: each window's dY divided by the divisor the forward pass used, spread
// over the window's input positions.
void avgPoolGrad(const ir::Node& node, const float* dy, float* dx) {
  const auto& xs = node.attrs().getInts("input_shape");
  const ir::Shape& ys = node.input(0)->type().shape;
  const Planes p{xs[0] * xs[1], xs[2], xs[3], ys[2], ys[3]};
  const auto& kernel = node.attrs().getInts("kernel");
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const bool includePad = node.attrs().getBool("count_include_pad");
  const int64_t divisorOverride = node.attrs().getInt("divisor_override");
  std::fill(dx, dx + node.output()->type().numel(), 0.0f);
  for (int64_t plane = 0; plane < p.count; ++plane) {
    float* grad = dx + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        int64_t h0 = oh * stride[0] - padding[0];
        int64_t w0 = ow * stride[1] - padding[1];
        int64_t h1 = std::min(h0 + kernel[0], p.H + padding[0]);
        int64_t w1 = std::min(w0 + kernel[1], p.W + padding[1]);
        const int64_t paddedCount = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, p.H);
        w1 = std::min(w1, p.W);
        const int64_t divisor = divisorOverride > 0 ? divisorOverride
                                : includePad        ? paddedCount
                                                    : (h1 - h0) * (w1 - w0);
        const float share = divisor > 0 ? *dy / static_cast<float>(divisor) : 0.0f;
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw) {
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
  for (int64_t plane = 0; plane < p.count; ++plane) {
    float* grad = dx + plane * p.H * p.W;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      const int64_t h0 = ir::adaptiveBinStart(oh, p.OH, p.H);
      const int64_t h1 = ir::adaptiveBinEnd(oh, p.OH, p.H);
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const int64_t w0 = ir::adaptiveBinStart(ow, p.OW, p.W);
        const int64_t w1 = ir::adaptiveBinEnd(ow, p.OW, p.W);
        const float share = *dy++ / static_cast<float>((h1 - h0) * (w1 - w0));
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw) {
            grad[ih * p.W + iw] += share;
          }
        }
      }
    }
  }
}

} // namespace

void pooling(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  switch (node.kind()) {
  case ir::OpKind::MaxPool2d: return maxPool(node, x, y);
  case ir::OpKind::AvgPool2d: return avgPool(node, x, y);
  case ir::OpKind::MaxPool2dGrad:
    return maxPoolGrad(node, x, static_cast<const float*>(inputs[1]), y);
  case ir::OpKind::AvgPool2dGrad: return avgPoolGrad(node, x, y);
  case ir::OpKind::AdaptiveAvgPool2dGrad: return adaptiveAvgPoolGrad(node, x, y);
  default: return adaptiveAvgPool(node, x, y);
  }
}

} // namespace popsim::kernels::reference
