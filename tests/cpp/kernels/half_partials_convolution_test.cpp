// The float16-partials convolution and its gradients against their
// definition, written here element by element, bit for bit. The kernels
// reduce each to matrix products over gathered operands (an offset set per
// product, outputs written in place or scattered); these geometries reach
// each of those paths: no padding (every offset reads every output pixel),
// padding (each offset its own set), strides, dilation, groups, 1-D and 3-D.
#include "common/float16.h"
#include "ir/graph.h"
#include "kernels/reference/families.h"
#include "kernels/reference/partial_sums.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace popsim::kernels::reference {
namespace {

using ir::Attributes;
using ir::DType;
using ir::OpKind;

struct Geometry {
  std::string name;
  std::vector<int64_t> x, w; // input [N, C, spatial...], weight [OC, C / groups, kernel...]
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

std::ostream& operator<<(std::ostream& out, const Geometry& g) { return out << g.name; }

uint32_t bitsOf(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

std::vector<float> halves(int64_t count, uint32_t seed) {
  std::vector<float> values = testing::randomFloats(count, seed, -2.0f, 2.0f);
  for (float& value : values)
    value = popsim::roundToHalf(value);
  return values;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

// The problem seen in 3 spatial dimensions, with its per-element sums.
struct Problem {
  int64_t N, C, OC, CG, OCG;
  std::array<int64_t, 3> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};

  explicit Problem(const Geometry& g)
      : N(g.x[0]), C(g.x[1]), OC(g.w[0]), CG(g.w[1]), OCG(g.w[0] / g.groups) {
    const size_t spatial = g.x.size() - 2, lead = 3 - spatial;
    for (size_t d = 0; d < spatial; ++d) {
      in[lead + d] = g.x[2 + d];
      kernel[lead + d] = g.w[2 + d];
      stride[lead + d] = g.stride[d];
      padding[lead + d] = g.padding[d];
      dilation[lead + d] = g.dilation[d];
      out[lead + d] =
          (in[lead + d] + 2 * padding[lead + d] - dilation[lead + d] * (kernel[lead + d] - 1) - 1) /
              stride[lead + d] +
          1;
    }
  }
  int64_t inPixels() const { return in[0] * in[1] * in[2]; }
  int64_t outPixels() const { return out[0] * out[1] * out[2]; }
  int64_t kernelPixels() const { return kernel[0] * kernel[1] * kernel[2]; }
  // The input pixel output pixel o reads through kernel offset k, -1 on the padding.
  int64_t tap(int64_t o, int64_t k) const {
    const int64_t oPos[3] = {o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]};
    const int64_t kPos[3] = {k / (kernel[1] * kernel[2]), k / kernel[2] % kernel[1], k % kernel[2]};
    int64_t pixel = 0;
    for (size_t d = 0; d < 3; ++d) {
      const int64_t at = oPos[d] * stride[d] - padding[d] + kPos[d] * dilation[d];
      if (at < 0 || at >= in[d]) return -1;
      pixel = pixel * in[d] + at;
    }
    return pixel;
  }
  std::vector<int64_t> outputShape(const Geometry& g) const {
    std::vector<int64_t> shape = {N, OC};
    for (size_t d = 3 - (g.x.size() - 2); d < 3; ++d)
      shape.push_back(out[d]);
    return shape;
  }
};

class HalfPartialsConvolutionTest : public ::testing::TestWithParam<Geometry> {};

Attributes attributesOf(const Geometry& g) {
  return {
      {"stride", g.stride}, {"padding", g.padding}, {"dilation", g.dilation}, {"groups", g.groups}};
}

// Forward: each output sums its window in (ic, k) order, the padding's zeros
// included; the bias is added to the rounded sum and rounded again.
TEST_P(HalfPartialsConvolutionTest, ForwardSumsEachWindowInOrder) {
  const Geometry& g = GetParam();
  const Problem p(g);
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", {DType::Float32, g.x});
  ir::Value* w = graph.addInput("w", {DType::Float32, g.w});
  ir::Value* b = graph.addInput("b", {DType::Float32, {p.OC}});
  const ir::Node& node = *graph.addNode(OpKind::Convolution, {x, w, b}, attributesOf(g));
  ASSERT_EQ(node.output()->type().shape, p.outputShape(g));
  std::vector<float> xs = halves(numel(g.x), 1), ws = halves(numel(g.w), 2), bs = halves(p.OC, 3);
  // NaN where the kernel writes nothing, so that no output passes unwritten.
  std::vector<float> y(static_cast<size_t>(node.output()->type().numel()),
                       std::numeric_limits<float>::quiet_NaN());
  convolutionWithHalfPartials(node, {xs.data(), ws.data(), bs.data()}, {y.data()});
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t oc = 0; oc < p.OC; ++oc) {
      const int64_t group = oc / p.OCG;
      for (int64_t o = 0; o < p.outPixels(); ++o) {
        HalfSum sum;
        for (int64_t ic = 0; ic < p.CG; ++ic) {
          for (int64_t k = 0; k < p.kernelPixels(); ++k) {
            const int64_t pixel = p.tap(o, k);
            const double input =
                pixel < 0
                    ? 0.0
                    : xs[static_cast<size_t>((n * p.C + group * p.CG + ic) * p.inPixels() + pixel)];
            sum.add(input * ws[static_cast<size_t>((oc * p.CG + ic) * p.kernelPixels() + k)]);
          }
        }
        const float expected = popsim::roundToHalf(sum.result() + bs[static_cast<size_t>(oc)]);
        const float actual = y[static_cast<size_t>((n * p.OC + oc) * p.outPixels() + o)];
        ASSERT_EQ(bitsOf(actual), bitsOf(expected)) << "y[" << n << ", " << oc << ", " << o << "]";
      }
    }
  }
}

// The taps on the padding add zeros, even against an infinite weight, as
// oneDNN's convolutions (popsim's float32 ones) have it.
TEST(HalfPartialsConvolutionTest, ThePaddingAddsZerosEvenAgainstAnInfiniteWeight) {
  const Geometry g{"padded", {1, 2, 3, 3}, {2, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", {DType::Float32, g.x});
  ir::Value* w = graph.addInput("w", {DType::Float32, g.w});
  const ir::Node& node = *graph.addNode(OpKind::Convolution, {x, w}, attributesOf(g));
  std::vector<float> xs(18, 1.0f), ws(36, 0.5f), y(18);
  // Output channel 1's weight for input channel 1 at the top-left tap.
  ws[(1 * 2 + 1) * 9 + 0] = std::numeric_limits<float>::infinity();
  convolutionWithHalfPartials(node, {xs.data(), ws.data()}, {y.data()});
  for (int64_t o = 0; o < 9; ++o) {
    EXPECT_EQ(y[static_cast<size_t>(o)], 0.5f * 2 * ((o / 3 == 1 ? 3 : 2) * (o % 3 == 1 ? 3 : 2)))
        << "y[0, " << o << "]";
    // Channel 1: the top-left tap reads the padding (a zero) on the top row
    // and the left column, and a 1 elsewhere (infinite).
    const float value = y[static_cast<size_t>(9 + o)];
    if (o / 3 == 0 || o % 3 == 0) {
      EXPECT_TRUE(std::isfinite(value)) << "y[1, " << o << "]";
    } else {
      EXPECT_TRUE(std::isinf(value)) << "y[1, " << o << "]";
    }
  }
}

// dX: each input element sums over output channels (outer), then the output
// pixels in order whose taps read it.
TEST_P(HalfPartialsConvolutionTest, InputGradientSumsByChannelThenOutputPixel) {
  const Geometry& g = GetParam();
  const Problem p(g);
  ir::Graph graph;
  ir::Value* dy = graph.addInput("dy", {DType::Float32, p.outputShape(g)});
  ir::Value* w = graph.addInput("w", {DType::Float32, g.w});
  Attributes attrs = attributesOf(g);
  attrs.set("input_shape", g.x);
  const ir::Node& node = *graph.addNode(OpKind::ConvolutionGradInput, {dy, w}, attrs);
  std::vector<float> dys = halves(dy->type().numel(), 4), ws = halves(numel(g.w), 5);
  std::vector<float> dx(static_cast<size_t>(numel(g.x)), std::numeric_limits<float>::quiet_NaN());
  convolutionWithHalfPartials(node, {dys.data(), ws.data()}, {dx.data()});
  // Each input pixel's taps (o, k), in order of o and then k: the order of
  // its products within each output channel.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> readers(static_cast<size_t>(p.inPixels()));
  for (int64_t o = 0; o < p.outPixels(); ++o) {
    for (int64_t k = 0; k < p.kernelPixels(); ++k) {
      const int64_t pixel = p.tap(o, k);
      if (pixel >= 0) readers[static_cast<size_t>(pixel)].emplace_back(o, k);
    }
  }
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t c = 0; c < p.C; ++c) {
      const int64_t group = c / p.CG, ic = c % p.CG;
      for (int64_t pixel = 0; pixel < p.inPixels(); ++pixel) {
        HalfSum sum;
        for (int64_t local = 0; local < p.OCG; ++local) {
          const int64_t oc = group * p.OCG + local;
          for (const auto& [o, k] : readers[static_cast<size_t>(pixel)]) {
            sum.add(
                static_cast<double>(dys[static_cast<size_t>((n * p.OC + oc) * p.outPixels() + o)]) *
                ws[static_cast<size_t>((oc * p.CG + ic) * p.kernelPixels() + k)]);
          }
        }
        const float expected = sum.result();
        const float actual = dx[static_cast<size_t>((n * p.C + c) * p.inPixels() + pixel)];
        ASSERT_EQ(bitsOf(actual), bitsOf(expected))
            << "dx[" << n << ", " << c << ", " << pixel << "]";
      }
    }
  }
}

// dW: each weight sums over the images, then the output pixels in order
// whose tap reads inside the input (the padding's taps are left out).
TEST_P(HalfPartialsConvolutionTest, WeightGradientSumsByImageThenOutputPixel) {
  const Geometry& g = GetParam();
  const Problem p(g);
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", {DType::Float32, g.x});
  ir::Value* dy = graph.addInput("dy", {DType::Float32, p.outputShape(g)});
  Attributes attrs = attributesOf(g);
  attrs.set("weight_shape", g.w);
  const ir::Node& node = *graph.addNode(OpKind::ConvolutionGradWeight, {x, dy}, attrs);
  std::vector<float> xs = halves(numel(g.x), 6), dys = halves(dy->type().numel(), 7);
  std::vector<float> dw(static_cast<size_t>(numel(g.w)), -1.0f);
  convolutionWithHalfPartials(node, {xs.data(), dys.data()}, {dw.data()});
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    const int64_t group = oc / p.OCG;
    for (int64_t ic = 0; ic < p.CG; ++ic) {
      for (int64_t k = 0; k < p.kernelPixels(); ++k) {
        HalfSum sum;
        for (int64_t n = 0; n < p.N; ++n) {
          for (int64_t o = 0; o < p.outPixels(); ++o) {
            const int64_t pixel = p.tap(o, k);
            if (pixel < 0) continue;
            sum.add(
                static_cast<double>(dys[static_cast<size_t>((n * p.OC + oc) * p.outPixels() + o)]) *
                xs[static_cast<size_t>((n * p.C + group * p.CG + ic) * p.inPixels() + pixel)]);
          }
        }
        const float expected = sum.result();
        const float actual = dw[static_cast<size_t>((oc * p.CG + ic) * p.kernelPixels() + k)];
        ASSERT_EQ(bitsOf(actual), bitsOf(expected))
            << "dw[" << oc << ", " << ic << ", " << k << "]";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, HalfPartialsConvolutionTest,
    ::testing::Values(
        Geometry{"conv2d_unpadded", {3, 2, 9, 8}, {5, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
        Geometry{"conv2d_padded", {2, 3, 7, 7}, {6, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
        Geometry{"conv2d_strided_padded", {2, 4, 9, 10}, {3, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1},
        Geometry{"conv2d_grouped_dilated", {2, 4, 11, 10}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {2, 1}, 2},
        Geometry{"conv2d_depthwise", {1, 5, 7, 7}, {5, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 5},
        Geometry{"conv2d_one_pixel", {4, 8, 1, 1}, {30, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
        Geometry{"conv2d_padded_in_height", {2, 3, 6, 5}, {4, 3, 3, 3}, {1, 1}, {1, 0}, {1, 1}, 1},
        Geometry{"conv2d_many_channels", {2, 40, 4, 4}, {37, 40, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
        // Rows longer than the product's panels, few input channels and more
        // than 1 MiB of gathered input: the forward pass and the input
        // gradient gather their operands a panel at a time (the
        // mixed-precision tutorial's second convolution, smaller).
        Geometry{"conv2d_long_rows", {3, 5, 31, 37}, {12, 5, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1},
        Geometry{"conv1d_grouped_strided", {2, 4, 13}, {6, 2, 3}, {2}, {1}, {2}, 2},
        // The corners' windows lie wholly on the padding: a set with no products.
        Geometry{
            "conv2d_windows_on_the_padding", {1, 2, 2, 2}, {3, 2, 1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
        Geometry{"conv3d_strided_dilated",
                 {2, 3, 6, 7, 5},
                 {4, 3, 2, 3, 2},
                 {2, 1, 1},
                 {1, 0, 1},
                 {1, 2, 1},
                 1}),
    [](const auto& testInfo) { return testInfo.param.name; });

} // namespace
} // namespace popsim::kernels::reference
