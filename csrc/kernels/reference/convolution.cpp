#include "kernels/reference/families.h"
#include "kernels/reference/half_partials_product.h"
#include "kernels/reference/partial_sums.h"
#include "kernels/reference/transpose.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>
#include <utility>
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

// The float16-partials forms, each a matrix product (halfPartialsProduct)
// whose every output sums the same products in the same order as
// forEachTap above, and so rounds them at the same points.

// Gathers of more elements than this are spread over the OpenMP threads.
constexpr int64_t kParallelElements = int64_t{1} << 16;

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

// Forward: for each group, the input's columns (ic, k) x (image, output
// pixel), zeros on the padding (im2col), times the group's weights as rows
// of (ic, k). A padded tap's product is then 0 x weight, which is the zero
// forEachTap adds unless the weight is infinite or NaN: such weights take
// the per-element form.
void convolutionForwardHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  auto* y = static_cast<float*>(outputs[0]);
  if (!std::all_of(w, w + node.input(1)->type().numel(),
                   [](float v) { return std::isfinite(v); })) {
    return convolutionForward<HalfSum>(node, inputs, outputs);
  }
  const ConvGeometry g(node, node.input(0)->type().shape, node.input(1)->type().shape,
                       node.output()->type().shape);
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t J = g.CG * kernelPixels; // reduction length, (ic, k) order
  const int64_t P = g.N * outPixels;
  const std::vector<std::vector<Tap>> taps = tapsOf(g);
  std::vector<float> columns(static_cast<size_t>(J * P));
  std::vector<float> sums(static_cast<size_t>(g.OCG * P));
  for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
    // Row (ic, k) of the columns, written in order.
#pragma omp parallel for schedule(static) if (J * P >= kParallelElements)
    for (int64_t j = 0; j < J; ++j) {
      const int64_t ic = j / kernelPixels;
      const auto k = static_cast<size_t>(j % kernelPixels);
      float* row = columns.data() + j * P;
      for (int64_t n = 0; n < g.N; ++n) {
        const float* plane = x + (n * g.C + group * g.CG + ic) * inPixels;
        for (int64_t o = 0; o < outPixels; ++o) {
          const int64_t pixel = taps[static_cast<size_t>(o)][k].pixel;
          row[n * outPixels + o] = pixel < 0 ? 0.0f : plane[pixel];
        }
      }
    }
    halfPartialsProduct(g.OCG, P, J, w + group * g.OCG * J, J, columns.data(), P, sums.data(), P);
    for (int64_t local = 0; local < g.OCG; ++local) {
      const int64_t oc = group * g.OCG + local;
      for (int64_t n = 0; n < g.N; ++n) {
        const float* in = sums.data() + local * P + n * outPixels;
        float* out = y + (n * g.OC + oc) * outPixels;
        for (int64_t o = 0; o < outPixels; ++o)
          out[o] = bias != nullptr ? popsim::roundToHalf(in[o] + bias[oc]) : in[o];
      }
    }
  }
}

// dX: each input element sums dY * W over output channels (outer) and the
// taps that read it (inner, by output pixel). Input pixels read by the same
// kernel offsets in the same order share the weights' side of the product:
// for each such set, rows (image, pixel) of dY gathered by (oc, reader) times
// W as (oc, reader) x ic.
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
  // The input pixels by the kernel offsets that read them, in order.
  std::map<std::vector<int64_t>, std::vector<int64_t>> pixelsByOffsets;
  for (int64_t pixel = 0; pixel < inPixels; ++pixel) {
    std::vector<int64_t> offsets;
    for (const Tap& reader : readers[static_cast<size_t>(pixel)])
      offsets.push_back(reader.k);
    pixelsByOffsets[offsets].push_back(pixel);
  }
  std::vector<float> a, b, sums;
  for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
    for (const auto& [offsets, pixels] : pixelsByOffsets) {
      const auto R = static_cast<int64_t>(offsets.size());
      const int64_t J = g.OCG * R;
      const int64_t M = g.N * static_cast<int64_t>(pixels.size());
      b.resize(static_cast<size_t>(J * g.CG));
      for (int64_t local = 0; local < g.OCG; ++local)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t ic = 0; ic < g.CG; ++ic)
            b[static_cast<size_t>((local * R + r) * g.CG + ic)] =
                w[((group * g.OCG + local) * g.CG + ic) * kernelPixels + offsets[r]];
      a.resize(static_cast<size_t>(M * J));
#pragma omp parallel for collapse(2) schedule(static) if (M * J >= kParallelElements)
      for (int64_t n = 0; n < g.N; ++n) {
        for (size_t i = 0; i < pixels.size(); ++i) {
          const std::vector<Tap>& pixelReaders = readers[static_cast<size_t>(pixels[i])];
          float* row = a.data() + (n * static_cast<int64_t>(pixels.size()) + i) * J;
          for (int64_t local = 0; local < g.OCG; ++local) {
            const float* plane = dy + (n * g.OC + group * g.OCG + local) * outPixels;
            for (int64_t r = 0; r < R; ++r)
              row[local * R + r] = plane[pixelReaders[static_cast<size_t>(r)].pixel];
          }
        }
      }
      sums.resize(static_cast<size_t>(M * g.CG));
      halfPartialsProduct(M, g.CG, J, a.data(), J, b.data(), g.CG, sums.data(), g.CG);
      for (int64_t n = 0; n < g.N; ++n) {
        for (size_t i = 0; i < pixels.size(); ++i) {
          const float* in = sums.data() + (n * static_cast<int64_t>(pixels.size()) + i) * g.CG;
          for (int64_t ic = 0; ic < g.CG; ++ic)
            dx[(n * g.C + group * g.CG + ic) * inPixels + pixels[i]] = in[ic];
        }
      }
    }
  }
}

// dW: each weight sums dY * X over the images and output pixels whose tap
// reads the input, in order. For each kernel offset, X gathered as rows ic
// by (image, output pixel) times dY as (image, output pixel) x oc.
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
  // dY as [n][o][oc], so that each read's output channels are one row.
  std::vector<float> dyt(static_cast<size_t>(g.N * outPixels * g.OC));
  for (int64_t n = 0; n < g.N; ++n)
    transpose(dy + n * g.OC * outPixels, g.OC, outPixels, dyt.data() + n * g.OC * outPixels);
  std::vector<float> a, b, sums(static_cast<size_t>(g.CG * g.OCG));
  std::vector<float> byOffset(static_cast<size_t>(g.CG * kernelPixels * g.OCG));
  for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
    for (int64_t k = 0; k < kernelPixels; ++k) {
      std::vector<std::pair<int64_t, int64_t>> reads; // (output pixel, input pixel)
      for (int64_t o = 0; o < outPixels; ++o) {
        const Tap& tap = taps[static_cast<size_t>(o)][static_cast<size_t>(k)];
        if (tap.pixel >= 0) reads.emplace_back(o, tap.pixel);
      }
      const auto R = static_cast<int64_t>(reads.size());
      const int64_t J = g.N * R;
      a.resize(static_cast<size_t>(g.CG * J));
      b.resize(static_cast<size_t>(J * g.OCG));
#pragma omp parallel for schedule(static) if (g.CG * J >= kParallelElements)
      for (int64_t ic = 0; ic < g.CG; ++ic) {
        for (int64_t n = 0; n < g.N; ++n) {
          const float* plane = x + (n * g.C + group * g.CG + ic) * inPixels;
          float* row = a.data() + ic * J + n * R;
          for (int64_t i = 0; i < R; ++i)
            row[i] = plane[reads[static_cast<size_t>(i)].second];
        }
      }
#pragma omp parallel for schedule(static) if (J * g.OCG >= kParallelElements)
      for (int64_t n = 0; n < g.N; ++n) {
        for (int64_t i = 0; i < R; ++i) {
          const float* channels = dyt.data() +
                                  (n * outPixels + reads[static_cast<size_t>(i)].first) * g.OC +
                                  group * g.OCG;
          std::copy(channels, channels + g.OCG, b.data() + (n * R + i) * g.OCG);
        }
      }
      halfPartialsProduct(g.CG, g.OCG, J, a.data(), J, b.data(), g.OCG, sums.data(), g.OCG);
      // Row ic of the product is dW[., ic, k]: kept as [ic][k][oc] ...
      for (int64_t ic = 0; ic < g.CG; ++ic)
        std::copy(sums.data() + ic * g.OCG, sums.data() + (ic + 1) * g.OCG,
                  byOffset.data() + (ic * kernelPixels + k) * g.OCG);
    }
    // ... and turned into the group's [oc][ic][k] at once (writing every k-th
    // element of dW per offset touches all its lines each time).
    transpose(byOffset.data(), g.CG * kernelPixels, g.OCG,
              dw + group * g.OCG * g.CG * kernelPixels);
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
