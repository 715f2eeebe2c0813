#pragma once

#include "kernels/reference/conv_geometry.h"

#include <cstdint>
#include <memory>
#include <vector>

// How the float16-partials convolution kernels walk a convolution's taps:
// which input pixel each tap reads, which taps fall on the padding, and how
// the taps group into matrix products. It depends on the geometry alone
// (not on the batch or the values), and a model runs the same convolutions
// step after step, so it is worked out once per geometry and kept.
namespace popsim::kernels::reference {

// A gather's index list as runs of consecutive indices, so that gathering
// copies whole runs (a stride-1 convolution reads rows of its input): the
// run's `length` elements from `from` on go to `start` on; `from` -1 is a
// run of zeros (the padding).
struct IndexRun {
  int64_t start;
  int64_t from;
  int64_t length;
};

std::vector<IndexRun> runsOf(const int64_t* index, int64_t count);

// For each of a gather's `count` destination elements, the index of the run
// that writes it (runs as runsOf gives them, which cover them all in order):
// where a gather of a few elements from the middle starts, without a search.
std::vector<int32_t> runAtEach(const std::vector<IndexRun>& runs, int64_t count);

// Output pixels whose taps fall inside the input at the same kernel offsets
// (a convolution's interior, each edge, each corner).
struct ForwardTapSet {
  std::vector<int64_t> offsets;                 // the kernel offsets inside, in order
  std::vector<IndexRun> offsetRuns;             // the same as runs (a weight row's gather)
  int64_t pixels;                               // how many output pixels
  std::vector<IndexRun> outputPixels;           // which, as runs
  std::vector<std::vector<IndexRun>> inputRuns; // per offset, the input pixels its taps read
  std::vector<std::vector<int32_t>> inputRunAt; // per offset, runAtEach of its inputRuns
  std::vector<int64_t> runLengths;              // the products' runs of partials (see below)
};

// Input pixels read by the same kernel offsets, in the same order of output
// pixels.
struct InputGradientTapSet {
  std::vector<int64_t> offsets; // the offsets of the taps that read them, by output pixel
  std::vector<int64_t> pixels;  // the input pixels
  // Per reader r, the output pixel pixel i's r-th tap writes, for each i, as
  // runs (a stride-1 convolution's readers of an input row are an output row).
  std::vector<std::vector<IndexRun>> readerRuns;
  std::vector<std::vector<int32_t>> readerRunAt; // per reader, runAtEach of its readerRuns
};

// Kernel offsets whose taps read inside the input at the same output pixels
// (every offset, without padding).
struct WeightGradientTapSet {
  std::vector<int64_t> offsets;
  int64_t reads;                                // how many output pixels
  std::vector<IndexRun> outputPixels;           // which, as runs
  std::vector<std::vector<IndexRun>> inputRuns; // per offset, the input pixels they read
};

struct ConvolutionPlan {
  // The forward pass's sets. A set's products are (input channel, inside
  // offset), in order; its runs of partials end where the whole window's
  // would, the padding's zero products counted (kHalfPartialRun each).
  std::vector<ForwardTapSet> forward;
  std::vector<InputGradientTapSet> inputGradient;
  std::vector<WeightGradientTapSet> weightGradient;
};

// The plan of a geometry, from this thread's cache of recent ones.
std::shared_ptr<const ConvolutionPlan> convolutionPlan(const ConvGeometry& g);

} // namespace popsim::kernels::reference
