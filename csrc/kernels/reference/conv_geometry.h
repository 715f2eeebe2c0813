#pragma once

#include "ir/node.h"

#include <cstdint>

namespace popsim::kernels::reference {

// The geometry shared by the forward convolution and its gradients, with 1-D
// and 2-D convolutions seen as 3-D ones whose leading spatial sizes are 1.
struct ConvGeometry {
  int64_t N, C, OC, CG, OCG; // batch, channels, output channels, per group
  int64_t in[3], kernel[3], out[3];
  int64_t stride[3], padding[3], dilation[3];

  ConvGeometry(const ir::Node& node, const ir::Shape& x, const ir::Shape& w, const ir::Shape& y)
      : N(x[0]), C(x[1]), OC(w[0]), CG(w[1]), OCG(w[0] / node.attrs().getInt("groups")) {
    const size_t spatial = x.size() - 2;
    const size_t lead = 3 - spatial;
    for (size_t i = 0; i < 3; ++i) {
      const bool real = i >= lead;
      in[i] = real ? x[2 + i - lead] : 1;
      kernel[i] = real ? w[2 + i - lead] : 1;
      out[i] = real ? y[2 + i - lead] : 1;
      stride[i] = real ? node.attrs().getInts("stride")[i - lead] : 1;
      padding[i] = real ? node.attrs().getInts("padding")[i - lead] : 0;
      dilation[i] = real ? node.attrs().getInts("dilation")[i - lead] : 1;
    }
  }

  // Calls fn(input offset, weight offset, output offset) for every
  // multiply-accumulate of the convolution (the taps on the padding have none).
  template <typename Fn> void forEachTap(Fn fn) const {
    const int64_t inPixels = in[0] * in[1] * in[2];
    const int64_t outPixels = out[0] * out[1] * out[2];
    const int64_t kernelPixels = kernel[0] * kernel[1] * kernel[2];
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t oc = 0; oc < OC; ++oc) {
        const int64_t g = oc / OCG;
        for (int64_t o = 0; o < outPixels; ++o) {
          const int64_t oPos[3] = {o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]};
          const int64_t output = (n * OC + oc) * outPixels + o;
          for (int64_t ic = 0; ic < CG; ++ic) {
            const int64_t c = g * CG + ic;
            for (int64_t k = 0; k < kernelPixels; ++k) {
              const int64_t kPos[3] = {k / (kernel[1] * kernel[2]), k / kernel[2] % kernel[1],
                                       k % kernel[2]};
              int64_t pixel = 0;
              bool inside = true;
              for (size_t d = 0; d < 3 && inside; ++d) {
                const int64_t at = oPos[d] * stride[d] - padding[d] + kPos[d] * dilation[d];
                inside = at >= 0 && at < in[d];
                pixel = pixel * in[d] + at;
              }
              if (inside) {
                fn((n * C + c) * inPixels + pixel, (oc * CG + ic) * kernelPixels + k, output);
              }
            }
          }
        }
      }
    }
  }
};

} // namespace popsim::kernels::reference
