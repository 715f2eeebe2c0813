#include "kernels/reference/families.h"
#include "kernels/reference/partial_sums.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace popsim::kernels::reference {
namespace {

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
  // multiply-accumulate of the convolution; with `withPadding`, also for the taps
  // on the padding, with input offset -1.
  template <typename Fn> void forEachTap(Fn fn, bool withPadding = false) const {
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
              if (inside || withPadding) {
                fn(inside ? (n * C + c) * inPixels + pixel : -1, (oc * CG + ic) * kernelPixels + k,
                   output);
              }
            }
          }
        }
      }
    }
  }
};

// Y = bias + sum over taps of X * W. With float16 partials, each output sums
// its window's products in order, zeros at the padding included, and adds the
// bias once they are summed (an op of its own on the IPU).
template <typename Sum>
void convolutionForward(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  constexpr bool kHalf = std::is_same_v<Sum, HalfSum>;
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  const ConvGeometry geometry(node, node.input(0)->type().shape, node.input(1)->type().shape,
                              node.output()->type().shape);
  const int64_t count = node.output()->type().numel();
  const int64_t pixels = count / std::max<int64_t>(geometry.N * geometry.OC, 1);
  Sums<Sum> y(static_cast<size_t>(count));
  geometry.forEachTap(
      [&](int64_t in, int64_t weight, int64_t out) {
        y.add(static_cast<size_t>(out), in < 0 ? 0.0 : static_cast<double>(x[in]) * w[weight]);
      },
      kHalf);
  if (!kHalf && bias != nullptr) {
    for (int64_t i = 0; i < count; ++i)
      y.add(static_cast<size_t>(i), bias[(i / pixels) % geometry.OC]);
  }
  auto* out = static_cast<float*>(outputs[0]);
  y.store(out);
  if (kHalf && bias != nullptr) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = popsim::roundToHalf(out[i] + bias[(i / pixels) % geometry.OC]);
  }
}

// dX = sum over taps of dY * W.
template <typename Sum>
void convolutionGradInput(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const ConvGeometry geometry(node, node.attrs().getInts("input_shape"),
                              node.input(1)->type().shape, node.input(0)->type().shape);
  Sums<Sum> dx(static_cast<size_t>(node.output()->type().numel()));
  geometry.forEachTap([&](int64_t in, int64_t weight, int64_t out) {
    dx.add(static_cast<size_t>(in), static_cast<double>(dy[out]) * w[weight]);
  });
  dx.store(static_cast<float*>(outputs[0]));
}

// dW = sum over taps of dY * X.
template <typename Sum>
void convolutionGradWeight(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* dy = static_cast<const float*>(inputs[1]);
  const ConvGeometry geometry(node, node.input(0)->type().shape,
                              node.attrs().getInts("weight_shape"), node.input(1)->type().shape);
  Sums<Sum> dw(static_cast<size_t>(node.output()->type().numel()));
  geometry.forEachTap([&](int64_t in, int64_t weight, int64_t out) {
    dw.add(static_cast<size_t>(weight), static_cast<double>(dy[out]) * x[in]);
  });
  dw.store(static_cast<float*>(outputs[0]));
}

// The float16-partials forms, a row of outputs at a time (HalfSumRow), each
// output summing the same products in the same order as forEachTap above.

// A tap of the kernel on one output pixel: the input pixel it reads (-1 on
// the padding) and the kernel offset.
struct Tap {
  int64_t pixel;
  int64_t k;
};

// For every output pixel, its kernel's taps in order (forEachTap's).
std::vector<std::vector<Tap>> tapsOf(const ConvGeometry& g) {
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(outPixels));
  for (int64_t o = 0; o < outPixels; ++o) {
    const int64_t oPos[3] = {o / (g.out[1] * g.out[2]), o / g.out[2] % g.out[1], o % g.out[2]};
    for (int64_t k = 0; k < kernelPixels; ++k) {
      const int64_t kPos[3] = {k / (g.kernel[1] * g.kernel[2]), k / g.kernel[2] % g.kernel[1],
                               k % g.kernel[2]};
      int64_t pixel = 0;
      bool inside = true;
      for (size_t d = 0; d < 3 && inside; ++d) {
        const int64_t at = oPos[d] * g.stride[d] - g.padding[d] + kPos[d] * g.dilation[d];
        inside = at >= 0 && at < g.in[d];
        pixel = pixel * g.in[d] + at;
      }
      taps[static_cast<size_t>(o)].push_back({inside ? pixel : -1, k});
    }
  }
  return taps;
}

// Forward: for each image and group, the input's columns (ic, k) x output
// pixel (im2col, the padding marked), then each output channel's row of
// pixels sums its weights times the columns in (ic, k) order, the padding's
// products zero whatever the weight.
void convolutionForwardHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  auto* y = static_cast<float*>(outputs[0]);
  const ConvGeometry g(node, node.input(0)->type().shape, node.input(1)->type().shape,
                       node.output()->type().shape);
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t J = g.CG * kernelPixels; // reduction length, (ic, k) order
  const std::vector<std::vector<Tap>> taps = tapsOf(g);
  std::vector<float> columns(static_cast<size_t>(J * outPixels));
  std::vector<unsigned char> padded(static_cast<size_t>(J * outPixels));
  HalfSumRow row(static_cast<size_t>(outPixels));
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
      for (int64_t ic = 0; ic < g.CG; ++ic) {
        const float* plane = x + (n * g.C + group * g.CG + ic) * inPixels;
        for (int64_t o = 0; o < outPixels; ++o) {
          for (const Tap& tap : taps[static_cast<size_t>(o)]) {
            const auto at = static_cast<size_t>((ic * kernelPixels + tap.k) * outPixels + o);
            columns[at] = tap.pixel < 0 ? 0.0f : plane[tap.pixel];
            padded[at] = tap.pixel < 0;
          }
        }
      }
      for (int64_t oc = group * g.OCG; oc < (group + 1) * g.OCG; ++oc) {
        row.reset();
        double* run = row.run();
        for (int64_t j = 0; j < J; ++j) {
          const double weight = w[oc * J + j];
          const float* column = columns.data() + j * outPixels;
          const unsigned char* pad = padded.data() + j * outPixels;
          for (int64_t o = 0; o < outPixels; ++o)
            run[o] += pad[o] ? 0.0 : column[o] * weight;
          row.added();
        }
        const float* sums = row.result();
        float* out = y + (n * g.OC + oc) * outPixels;
        for (int64_t o = 0; o < outPixels; ++o)
          out[o] = bias != nullptr ? popsim::roundToHalf(sums[o] + bias[oc]) : sums[o];
      }
    }
  }
}

// dX: each input element sums dY * W over the taps that read it, output
// channel by output channel, output pixels in order: a row of a group's
// input channels at once (their taps are the same), with W as [oc][k][ic].
void convolutionGradInputHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  auto* dx = static_cast<float*>(outputs[0]);
  const ConvGeometry g(node, node.attrs().getInts("input_shape"), node.input(1)->type().shape,
                       node.input(0)->type().shape);
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  // For each input pixel, the (output pixel, k) taps that read it, by output pixel.
  std::vector<std::vector<Tap>> readers(static_cast<size_t>(inPixels));
  const std::vector<std::vector<Tap>> taps = tapsOf(g);
  for (int64_t o = 0; o < outPixels; ++o)
    for (const Tap& tap : taps[static_cast<size_t>(o)])
      if (tap.pixel >= 0) readers[static_cast<size_t>(tap.pixel)].push_back({o, tap.k});
  std::vector<float> wt(static_cast<size_t>(g.OC * kernelPixels * g.CG));
  for (int64_t oc = 0; oc < g.OC; ++oc)
    for (int64_t ic = 0; ic < g.CG; ++ic)
      for (int64_t k = 0; k < kernelPixels; ++k)
        wt[static_cast<size_t>((oc * kernelPixels + k) * g.CG + ic)] =
            w[(oc * g.CG + ic) * kernelPixels + k];
  HalfSumRow row(static_cast<size_t>(g.CG));
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
      for (int64_t pixel = 0; pixel < inPixels; ++pixel) {
        row.reset();
        for (int64_t oc = group * g.OCG; oc < (group + 1) * g.OCG; ++oc) {
          for (const Tap& reader : readers[static_cast<size_t>(pixel)]) {
            row.addScaled(dy[(n * g.OC + oc) * outPixels + reader.pixel],
                          wt.data() + (oc * kernelPixels + reader.k) * g.CG);
          }
        }
        const float* sums = row.result();
        for (int64_t ic = 0; ic < g.CG; ++ic)
          dx[(n * g.C + group * g.CG + ic) * inPixels + pixel] = sums[ic];
      }
    }
  }
}

// dW: each weight sums dY * X over the images and output pixels whose tap
// reads the input, in order: a row of a group's output channels at once
// (their taps are the same), with dY as [n][o][oc].
void convolutionGradWeightHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* dy = static_cast<const float*>(inputs[1]);
  auto* dw = static_cast<float*>(outputs[0]);
  const ConvGeometry g(node, node.input(0)->type().shape, node.attrs().getInts("weight_shape"),
                       node.input(1)->type().shape);
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const std::vector<std::vector<Tap>> taps = tapsOf(g);
  std::vector<float> dyt(static_cast<size_t>(g.N * outPixels * g.OC));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < g.OC; ++oc)
      for (int64_t o = 0; o < outPixels; ++o)
        dyt[static_cast<size_t>((n * outPixels + o) * g.OC + oc)] =
            dy[(n * g.OC + oc) * outPixels + o];
  HalfSumRow row(static_cast<size_t>(g.OCG));
  for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
    for (int64_t ic = 0; ic < g.CG; ++ic) {
      const int64_t c = group * g.CG + ic;
      for (int64_t k = 0; k < kernelPixels; ++k) {
        row.reset();
        for (int64_t n = 0; n < g.N; ++n) {
          for (int64_t o = 0; o < outPixels; ++o) {
            const Tap& tap = taps[static_cast<size_t>(o)][static_cast<size_t>(k)];
            if (tap.pixel < 0) continue;
            row.addScaled(x[(n * g.C + c) * inPixels + tap.pixel],
                          dyt.data() + (n * outPixels + o) * g.OC + group * g.OCG);
          }
        }
        const float* sums = row.result();
        for (int64_t oc = 0; oc < g.OCG; ++oc)
          dw[((group * g.OCG + oc) * g.CG + ic) * kernelPixels + k] = sums[oc];
      }
    }
  }
}

template <typename Sum>
void convolutionSummedBy(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::ConvolutionGradInput: return convolutionGradInput<Sum>(node, inputs, outputs);
  case ir::OpKind::ConvolutionGradWeight: return convolutionGradWeight<Sum>(node, inputs, outputs);
  default: return convolutionForward<Sum>(node, inputs, outputs);
  }
}

} // namespace

// Direct convolution with 1 to 3 spatial dimensions, as
// torch.nn.functional.conv1d/2d/3d define it, and its gradients.
void convolution(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  convolutionSummedBy<FloatSum>(node, inputs, outputs);
}

void convolutionWithHalfPartials(const ir::Node& node, const Inputs& inputs,
                                 const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::ConvolutionGradInput: return convolutionGradInputHalf(node, inputs, outputs);
  case ir::OpKind::ConvolutionGradWeight: return convolutionGradWeightHalf(node, inputs, outputs);
  default: return convolutionForwardHalf(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
