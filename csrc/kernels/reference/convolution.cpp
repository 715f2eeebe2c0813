#include "kernels/reference/families.h"

#include <vector>

namespace popsim::kernels::reference {
namespace {

// The geometry shared by the forward convolution and its gradients.
struct ConvGeometry {
  int64_t N, C, H, W;     // input
  int64_t OC, CG, KH, KW; // weight: output channels, input channels per group, kernel
  int64_t OH, OW;         // output
  int64_t OCG;            // output channels per group
  std::vector<int64_t> stride, padding, dilation;

  ConvGeometry(const ir::Node& node, const ir::Shape& x, const ir::Shape& w, const ir::Shape& y)
      : N(x[0]), C(x[1]), H(x[2]), W(x[3]), OC(w[0]), CG(w[1]), KH(w[2]), KW(w[3]), OH(y[2]),
        OW(y[3]), OCG(w[0] / node.attrs().getInt("groups")), stride(node.attrs().getInts("stride")),
        padding(node.attrs().getInts("padding")), dilation(node.attrs().getInts("dilation")) {}

  // Calls fn(input offset, weight offset, output offset) for every
  // multiply-accumulate of the convolution.
  template <typename Fn> void forEachTap(Fn fn) const {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t oc = 0; oc < OC; ++oc) {
        const int64_t g = oc / OCG;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t out = ((n * OC + oc) * OH + oh) * OW + ow;
            for (int64_t ic = 0; ic < CG; ++ic) {
              const int64_t c = g * CG + ic;
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
                if (ih < 0 || ih >= H) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t iw = ow * stride[1] - padding[1] + kw * dilation[1];
                  if (iw < 0 || iw >= W) continue;
                  fn(((n * C + c) * H + ih) * W + iw, ((oc * CG + ic) * KH + kh) * KW + kw, out);
                }
              }
            }
          }
        }
      }
    }
  }
};

void store(const std::vector<double>& sums, float* out) {
  for (size_t i = 0; i < sums.size(); ++i) {
    out[i] = static_cast<float>(sums[i]);
  }
}

// dX = sum over taps of dY * W.
void convolutionGradInput(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const ConvGeometry geometry(node, node.attrs().getInts("input_shape"),
                              node.input(1)->type().shape, node.input(0)->type().shape);
  std::vector<double> dx(static_cast<size_t>(node.output()->type().numel()), 0.0);
  geometry.forEachTap([&](int64_t in, int64_t weight, int64_t out) {
    dx[static_cast<size_t>(in)] += static_cast<double>(dy[out]) * w[weight];
  });
  store(dx, static_cast<float*>(outputs[0]));
}

// dW = sum over taps of dY * X.
void convolutionGradWeight(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* dy = static_cast<const float*>(inputs[1]);
  const ConvGeometry geometry(node, node.input(0)->type().shape,
                              node.attrs().getInts("weight_shape"), node.input(1)->type().shape);
  std::vector<double> dw(static_cast<size_t>(node.output()->type().numel()), 0.0);
  geometry.forEachTap([&](int64_t in, int64_t weight, int64_t out) {
    dw[static_cast<size_t>(weight)] += static_cast<double>(dy[out]) * x[in];
  });
  store(dw, static_cast<float*>(outputs[0]));
}

} // namespace

// Direct convolution, as torch.nn.functional.conv2d defines it, and its gradients.
void convolution(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.kind() == ir::OpKind::Conv2dGradInput) {
    return convolutionGradInput(node, inputs, outputs);
  }
  if (node.kind() == ir::OpKind::Conv2dGradWeight) {
    return convolutionGradWeight(node, inputs, outputs);
  }
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  auto* y = static_cast<float*>(outputs[0]);
  const ir::Shape& xs = node.input(0)->type().shape;
  const ir::Shape& ws = node.input(1)->type().shape;
  const ir::Shape& ys = node.output()->type().shape;
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  const int64_t groups = node.attrs().getInt("groups");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t OC = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = ys[2], OW = ys[3];
  const int64_t OCG = OC / groups;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t g = oc / OCG;
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          double sum = bias != nullptr ? bias[oc] : 0.0;
          for (int64_t ic = 0; ic < CG; ++ic) {
            const int64_t c = g * CG + ic;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * stride[1] - padding[1] + kw * dilation[1];
                if (iw < 0 || iw >= W) continue;
                sum += static_cast<double>(x[((n * C + c) * H + ih) * W + iw]) *
                       w[((oc * CG + ic) * KH + kh) * KW + kw];
              }
            }
          }
          y[((n * OC + oc) * OH + oh) * OW + ow] = static_cast<float>(sum);
        }
      }
    }
  }
}

} // namespace popsim::kernels::reference
