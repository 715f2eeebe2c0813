#include "kernels/reference/families.h"

namespace popsim::kernels::reference {

// Direct convolution, as torch.nn.functional.conv2d defines it.
void convolution(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
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
