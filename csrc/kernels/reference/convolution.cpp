#include "kernels/reference/conv_geometry.h"
#include "kernels/reference/convolution_plan.h"
#include "kernels/reference/families.h"

#include "kernels/half_rounding.h"
#include "kernels/reference/half_partials_product.h"
#include "kernels/reference/partial_sums.h"
#include "kernels/reference/scratch.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

namespace popsim::kernels::reference {
namespace {

// Y = bias + sum over taps of X * W.
template <typename Sum>
void convolutionForward(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  const ConvGeometry geometry(node, node.input(0)->type().shape, node.input(1)->type().shape,
                              node.output()->type().shape);
  const int64_t count = node.output()->type().numel();
  const int64_t pixels = count / std::max<int64_t>(geometry.N * geometry.OC, 1);
  Sums<Sum> y(static_cast<size_t>(count));
  geometry.forEachTap([&](int64_t in, int64_t weight, int64_t out) {
    y.add(static_cast<size_t>(out), static_cast<double>(x[in]) * w[weight]);
  });
  if (bias != nullptr) {
    for (int64_t i = 0; i < count; ++i)
      y.add(static_cast<size_t>(i), bias[(i / pixels) % geometry.OC]);
  }
  y.store(static_cast<float*>(outputs[0]));
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

// A product's gathered operand, J x P (a convolution's input through its
// kernel's offsets, the input times the kernel's size), is gathered a panel
// at a time, just before the product reads it, when whole it would be more
// than a core's cache holds (1 MiB, within the 1-2 MiB of L2 of current x86
// cores: gathered whole, it would be written to memory and read back), and
// each panel has rows enough (a run of partials) to pay for the calls a panel
// costs. Otherwise it is gathered whole, in fewer and longer copies.
bool gatherPanelByPanel(int64_t J, int64_t P) {
  return J >= kHalfPartialRun && static_cast<size_t>(J * P) * sizeof(float) > (size_t{1} << 20);
}

// Runs shorter than this are copied by a loop of their own: a small image's
// rows are a few elements, for which a call to memmove costs more than the copy.
constexpr int64_t kShortRun = 32;

void gather(const std::vector<IndexRun>& runs, const float* from, float* to) {
  for (const IndexRun& run : runs) {
    float* out = to + run.start;
    if (run.from < 0) {
      for (int64_t i = 0; i < run.length; ++i)
        out[i] = 0.0f;
    } else if (run.length < kShortRun) {
      const float* in = from + run.from;
      for (int64_t i = 0; i < run.length; ++i)
        out[i] = in[i];
    } else {
      std::copy(from + run.from, from + run.from + run.length, out);
    }
  }
}

// Row (ic, t) of `rows`: the group's input channel ic read through the t-th
// of a set's offsets (`inputRuns`) at its `count` output pixels, image after
// image.
void gatherThroughOffsets(const float* x, const ConvGeometry& g, int64_t group,
                          const std::vector<std::vector<IndexRun>>& inputRuns, int64_t count,
                          float* rows) {
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const auto offsets = static_cast<int64_t>(inputRuns.size());
  const int64_t length = g.N * count;
#pragma omp parallel for collapse(2)                                                               \
    schedule(static) if (g.CG * offsets * length >= kParallelElements)
  for (int64_t ic = 0; ic < g.CG; ++ic) {
    for (int64_t t = 0; t < offsets; ++t) {
      float* row = rows + (ic * offsets + t) * length;
      for (int64_t n = 0; n < g.N; ++n)
        gather(inputRuns[static_cast<size_t>(t)], x + (n * g.C + group * g.CG + ic) * inPixels,
               row + n * count);
    }
  }
}

// The runs of a gathered operand whose rows are (channel, reader) and whose
// columns are a set's pixels: row (c, r) holds, at pixel i of image n, the
// value runs[r] gathers (as gather() does) from source(n, c); runAt[r][i] is
// the run that writes pixel i.
struct GatherRuns {
  const std::vector<std::vector<IndexRun>>& runs;
  const std::vector<std::vector<int32_t>>& runAt;
};

// Columns p0 .. p0 + columns of that operand (column n * count + i is pixel
// i of image n) as a panel of halfPartialsProduct: row (c, r) at
// panel[(c * readers + r) * width]. Image by image, each run of reader r
// that meets the panel is copied for every channel: pixels first .. first +
// length of the run's piece.
template <typename Source>
void gatherPanel(const GatherRuns& gathered, int64_t channels, int64_t count, const Source& source,
                 int64_t p0, int64_t columns, int64_t width, float* panel) {
  const auto readers = static_cast<int64_t>(gathered.runs.size());
  for (int64_t p = p0; p < p0 + columns;) {
    const int64_t n = p / count, i0 = p % count;
    const int64_t i1 = std::min(count, i0 + p0 + columns - p);
    float* lanes = panel + (p - p0) - i0; // lanes[i] is pixel i's lane
    for (int64_t r = 0; r < readers; ++r) {
      const std::vector<IndexRun>& runs = gathered.runs[static_cast<size_t>(r)];
      auto run = runs.begin() + gathered.runAt[static_cast<size_t>(r)][static_cast<size_t>(i0)];
      for (; run != runs.end() && run->start < i1; ++run) {
        const int64_t first = std::max(run->start, i0);
        const int64_t length = std::min(run->start + run->length, i1) - first;
        for (int64_t c = 0; c < channels; ++c) {
          float* __restrict out = lanes + (c * readers + r) * width + first;
          if (run->from < 0) { // a tap on the padding
            std::fill(out, out + length, 0.0f);
            continue;
          }
          const float* __restrict in = source(n, c) + run->from + first - run->start;
          for (int64_t k = 0; k < length; ++k) // (a memmove call costs more)
            out[k] = in[k];
        }
      }
    }
    p += i1 - i0;
  }
}

// Forward: each output sums its window's products in (ic, k) order, a zero
// for each tap on the padding included. Output pixels whose taps fall
// inside the input at the same kernel offsets form a set (the interior, each
// edge, each corner); for each set, the input's columns (ic, inside offset)
// x (image, output pixel) times the group's weights as rows of (ic, inside
// offset). The taps on the padding are left out of the product, since they
// add nothing, but they still count towards the runs of partials, which end
// where they would with them (halfPartialsProduct's run lengths): a small
// image's border is most of it (ResNet's last layers at 32x32 are 2x2 and
// 1x1, whose 3x3 windows are half or 8/9 padding). The padding adds a zero
// even against an infinite weight, as oneDNN's convolutions (popsim's
// float32 ones, and eager PyTorch's for batches over one) have it.
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
  const std::shared_ptr<const ConvolutionPlan> plan = convolutionPlan(g);
  size_t largestColumns = 0, largestWeights = 0, largestSums = 0;
  for (const ForwardTapSet& set : plan->forward) {
    const auto J = static_cast<size_t>(g.CG) * set.offsets.size();
    const auto P = static_cast<size_t>(g.N * set.pixels);
    if (!gatherPanelByPanel(static_cast<int64_t>(J), static_cast<int64_t>(P)))
      largestColumns = std::max(largestColumns, J * P);
    largestWeights = std::max(largestWeights, static_cast<size_t>(g.OCG) * J);
    largestSums = std::max(largestSums, static_cast<size_t>(g.OCG) * P);
  }
  Scratch<float> columns(ScratchUse::Gathered, largestColumns);
  Scratch<float> weights(ScratchUse::GatheredOther, largestWeights);
  Scratch<float> sums(ScratchUse::Results, largestSums);
  for (const ForwardTapSet& set : plan->forward) {
    const auto inside = static_cast<int64_t>(set.offsets.size());
    const int64_t count = set.pixels;
    const int64_t J = g.CG * inside; // reduction length, (ic, inside offset) order
    const int64_t P = g.N * count;
    // The group's weights as rows of (ic, inside offset): in place when every
    // offset is inside, otherwise gathered.
    const bool wholeWindow = inside == kernelPixels;
    for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
      const float* groupWeights = w + group * g.OCG * g.CG * kernelPixels;
      if (!wholeWindow) {
        for (int64_t row = 0; row < g.OCG * g.CG; ++row)
          gather(set.offsetRuns, groupWeights + row * kernelPixels, weights.data() + row * inside);
      }
      // The input's columns (ic, inside offset) x (image, output pixel):
      // the input times the kernel's size, gathered a panel at a time when
      // that is more than a cache holds.
      const MatrixView groupRows{wholeWindow ? groupWeights : weights.data(), J};
      if (gatherPanelByPanel(J, P)) {
        const auto source = [&](int64_t n, int64_t ic) {
          return x + (n * g.C + group * g.CG + ic) * inPixels;
        };
        halfPartialsProduct(
            g.OCG, P, set.runLengths, groupRows,
            [&](int64_t p0, int64_t panelColumns, int64_t width, float* panel) {
              gatherPanel({set.inputRuns, set.inputRunAt}, g.CG, count, source, p0, panelColumns,
                          width, panel);
            },
            OutputView{sums.data(), P});
      } else {
        gatherThroughOffsets(x, g, group, set.inputRuns, count, columns.data());
        halfPartialsProduct(g.OCG, P, set.runLengths, groupRows, MatrixView{columns.data(), P},
                            OutputView{sums.data(), P});
      }
      for (int64_t local = 0; local < g.OCG; ++local) {
        const int64_t oc = group * g.OCG + local;
        for (int64_t n = 0; n < g.N; ++n) {
          const float* in = sums.data() + local * P + n * count;
          float* out = y + (n * g.OC + oc) * outPixels;
          for (const IndexRun& run : set.outputPixels)
            std::copy(in + run.start, in + run.start + run.length, out + run.from);
        }
      }
    }
  }
  // The bias is added to the rounded sums, and rounded again (an op of its
  // own on the IPU).
  if (bias != nullptr) {
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t oc = 0; oc < g.OC; ++oc)
        for (float *out = y + (n * g.OC + oc) * outPixels, *stop = out + outPixels; out < stop;
             ++out)
          *out += bias[oc];
    roundToHalf(y, static_cast<size_t>(g.N * g.OC * outPixels));
  }
}

// dX: each input element sums dY * W over output channels (outer) and the
// taps that read it (inner, by output pixel). Input pixels read by the same
// kernel offsets in the same order share the weights' side of the product,
// W as (oc, reader) x ic; dY's side, gathered by (oc, reader) for each
// (image, pixel), is many times the size of dY (a value per reader), a run
// of an input row's readers being a run of dY's row. Two forms:
// - with few input channels and dY's side too large for a core's cache
//   (gatherPanelByPanel), dX's channels x (image, pixel) = W^T times dY as
//   (oc, reader) x (image, pixel), each panel of dY's side gathered just
//   before the product reads it (gathering it whole and then reading it was
//   most of the step of a network whose first layers have few channels);
// - otherwise (image, pixel) x dX's channels = dY's side, gathered whole as
//   rows, times W, whose rows the product reads in place.
// Both sum the same products in the same order.
constexpr int64_t kFewInputChannels = 16;

bool inputGradientPanelByPanel(const ConvGeometry& g, int64_t J, int64_t P) {
  return g.CG < kFewInputChannels && gatherPanelByPanel(J, P);
}

void convolutionGradInputHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  auto* dx = static_cast<float*>(outputs[0]);
  const ConvGeometry g(node, node.attrs().getInts("input_shape"), node.input(1)->type().shape,
                       node.input(0)->type().shape);
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const std::shared_ptr<const ConvolutionPlan> plan = convolutionPlan(g);
  size_t largestRows = 0, largestWeights = 0, largestSums = 0;
  for (const InputGradientTapSet& set : plan->inputGradient) {
    const auto J = static_cast<size_t>(g.OCG) * set.offsets.size();
    const auto pixels = static_cast<size_t>(g.N) * set.pixels.size();
    if (!inputGradientPanelByPanel(g, static_cast<int64_t>(J), static_cast<int64_t>(pixels)))
      largestRows = std::max(largestRows, pixels * J);
    largestWeights = std::max(largestWeights, static_cast<size_t>(g.CG) * J);
    largestSums = std::max(largestSums, static_cast<size_t>(g.CG) * pixels);
  }
  Scratch<float> rows(ScratchUse::Gathered, largestRows);
  Scratch<float> weights(ScratchUse::GatheredOther, largestWeights);
  Scratch<float> sums(ScratchUse::Results, largestSums);
  for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
    const float* dyOfGroup = dy + group * g.OCG * outPixels;
    for (const InputGradientTapSet& set : plan->inputGradient) {
      const auto R = static_cast<int64_t>(set.offsets.size());
      const auto count = static_cast<int64_t>(set.pixels.size());
      const int64_t J = g.OCG * R; // (oc, reader) order
      const int64_t P = g.N * count;
      const bool panelByPanel = inputGradientPanelByPanel(g, J, P);
      // W as (oc, reader) x ic, stored as its transpose ic x (oc, reader) when
      // the product takes it so.
      const int64_t icStride = panelByPanel ? J : 1;
      const int64_t jStride = panelByPanel ? 1 : g.CG;
      for (int64_t local = 0; local < g.OCG; ++local)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t ic = 0; ic < g.CG; ++ic)
            weights[static_cast<size_t>(ic * icStride + (local * R + r) * jStride)] =
                w[((group * g.OCG + local) * g.CG + ic) * kernelPixels +
                  set.offsets[static_cast<size_t>(r)]];
      const auto source = [&](int64_t n, int64_t local) {
        return dyOfGroup + (n * g.OC + local) * outPixels;
      };
      if (panelByPanel) {
        halfPartialsProduct(
            g.CG, P, evenPartialRuns(J), MatrixView{weights.data(), J},
            [&](int64_t p0, int64_t columns, int64_t width, float* panel) {
              gatherPanel({set.readerRuns, set.readerRunAt}, g.OCG, count, source, p0, columns,
                          width, panel);
            },
            OutputView{sums.data(), P});
      } else {
        // Row (n, i): for each oc, the values of pixel i's readers, written
        // in order (each reader's output pixel found once per pixel).
#pragma omp parallel for schedule(static) if (P * J >= kParallelElements)
        for (int64_t n = 0; n < g.N; ++n) {
          std::vector<int64_t> readerPixels(static_cast<size_t>(R));
          for (int64_t i = 0; i < count; ++i) {
            for (int64_t r = 0; r < R; ++r) {
              const auto reader = static_cast<size_t>(r);
              const IndexRun& run = set.readerRuns[reader][static_cast<size_t>(
                  set.readerRunAt[reader][static_cast<size_t>(i)])];
              readerPixels[reader] = run.from + i - run.start; // (every reader reads inside dY)
            }
            float* row = rows.data() + (n * count + i) * J;
            for (int64_t local = 0; local < g.OCG; ++local) {
              const float* plane = source(n, local);
              for (int64_t r = 0; r < R; ++r)
                row[local * R + r] = plane[readerPixels[static_cast<size_t>(r)]];
            }
          }
        }
        // sums^T: (image, pixel) x ic, written as ic x (image, pixel).
        halfPartialsProduct(P, g.CG, J, MatrixView{rows.data(), J},
                            MatrixView{weights.data(), g.CG}, OutputView{sums.data(), 1, P});
      }
      for (int64_t ic = 0; ic < g.CG; ++ic) {
        for (int64_t n = 0; n < g.N; ++n) {
          const float* in = sums.data() + ic * P + n * count;
          float* plane = dx + (n * g.C + group * g.CG + ic) * inPixels;
          for (int64_t i = 0; i < count; ++i)
            plane[set.pixels[static_cast<size_t>(i)]] = in[i];
        }
      }
    }
  }
}

// dW: each weight sums dY * X over the images and output pixels whose tap
// reads the input, in order. Kernel offsets that read at the same output
// pixels (all of them, without padding) share dY's side of the product:
// for each such set of S offsets, dY gathered as rows oc by (image, output
// pixel) times X gathered as (image, output pixel) x (ic, offset). The first
// layers, with few input channels, then fill the product's tiles, and the
// result lands in dW's own [oc][ic][k] order.
void convolutionGradWeightHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* dy = static_cast<const float*>(inputs[1]);
  auto* dw = static_cast<float*>(outputs[0]);
  const ConvGeometry g(node, node.input(0)->type().shape, node.attrs().getInts("weight_shape"),
                       node.input(1)->type().shape);
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const std::shared_ptr<const ConvolutionPlan> plan = convolutionPlan(g);
  size_t largestA = 0, largestB = 0;
  for (const WeightGradientTapSet& set : plan->weightGradient) {
    const auto J = static_cast<size_t>(g.N * set.reads);
    largestA = std::max(largestA, static_cast<size_t>(g.CG) * set.offsets.size() * J);
    largestB = std::max(largestB, J * static_cast<size_t>(g.OCG));
  }
  Scratch<float> a(ScratchUse::Gathered, largestA);
  Scratch<float> b(ScratchUse::GatheredOther, largestB);
  Scratch<float> sums(ScratchUse::Results, static_cast<size_t>(g.CG * kernelPixels * g.OCG));
  for (int64_t group = 0; group < g.OC / g.OCG; ++group) {
    for (const WeightGradientTapSet& set : plan->weightGradient) {
      const int64_t R = set.reads;
      const auto S = static_cast<int64_t>(set.offsets.size());
      const int64_t J = g.N * R;
      gatherThroughOffsets(x, g, group, set.inputRuns, R, a.data());
      // dY as rows oc by (image, output pixel).
#pragma omp parallel for collapse(2) schedule(static) if (J * g.OCG >= kParallelElements)
      for (int64_t local = 0; local < g.OCG; ++local) {
        for (int64_t n = 0; n < g.N; ++n)
          gather(set.outputPixels, dy + (n * g.OC + group * g.OCG + local) * outPixels,
                 b.data() + local * J + n * R);
      }
      // dW[group's oc][ic][offsets[s]] is the product's element (oc, (ic, s)):
      // written in place when the set's offsets fall on dW's with one stride
      // (a single offset, or all of them), else through `sums`.
      float* groupWeights = dw + group * g.OCG * g.CG * kernelPixels;
      const bool inPlace = S == 1 || S == kernelPixels;
      const OutputView out =
          S == 1    ? OutputView{groupWeights + set.offsets[0], g.CG * kernelPixels, kernelPixels}
          : inPlace ? OutputView{groupWeights, g.CG * kernelPixels, 1}
                    : OutputView{sums.data(), g.CG * S, 1};
      halfPartialsProduct(g.OCG, g.CG * S, J, MatrixView{b.data(), J}, MatrixView{a.data(), 1, J},
                          out);
      if (inPlace) continue;
      for (int64_t local = 0; local < g.OCG; ++local)
        for (int64_t ic = 0; ic < g.CG; ++ic)
          for (int64_t s = 0; s < S; ++s)
            groupWeights[(local * g.CG + ic) * kernelPixels + set.offsets[static_cast<size_t>(s)]] =
                sums[static_cast<size_t>((local * g.CG + ic) * S + s)];
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
