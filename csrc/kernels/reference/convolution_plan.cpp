#include "kernels/reference/convolution_plan.h"

#include "kernels/reference/partial_sums.h"

#include <map>

namespace popsim::kernels::reference {
namespace {

// The input pixel each kernel offset reads for each output pixel, -1 on the
// padding: element k * outPixels + o (forEachTap's taps, offset by offset).
std::vector<int64_t> tapPixels(const ConvGeometry& g) {
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::vector<int64_t> pixels(static_cast<size_t>(kernelPixels * outPixels));
  int64_t* next = pixels.data();
  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
          const int64_t at0 = o0 * g.stride[0] - g.padding[0] + k0 * g.dilation[0];
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
            const int64_t at1 = o1 * g.stride[1] - g.padding[1] + k1 * g.dilation[1];
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
              const int64_t at2 = o2 * g.stride[2] - g.padding[2] + k2 * g.dilation[2];
              const bool inside = at0 >= 0 && at0 < g.in[0] && at1 >= 0 && at1 < g.in[1] &&
                                  at2 >= 0 && at2 < g.in[2];
              *next++ = inside ? (at0 * g.in[1] + at1) * g.in[2] + at2 : -1;
            }
          }
        }
      }
    }
  }
  return pixels;
}

// For each of `offsets`, the input pixels its taps read at output pixels
// `pixels`, as runs.
std::vector<std::vector<IndexRun>> inputRunsOf(const std::vector<int64_t>& taps, int64_t outPixels,
                                               const std::vector<int64_t>& offsets,
                                               const std::vector<int64_t>& pixels) {
  std::vector<std::vector<IndexRun>> runs;
  std::vector<int64_t> read(pixels.size());
  for (int64_t k : offsets) {
    for (size_t i = 0; i < pixels.size(); ++i)
      read[i] = taps[static_cast<size_t>(k * outPixels + pixels[i])];
    runs.push_back(runsOf(read.data(), static_cast<int64_t>(read.size())));
  }
  return runs;
}

std::vector<ForwardTapSet> forwardSets(const ConvGeometry& g, const std::vector<int64_t>& taps) {
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::map<std::vector<int64_t>, std::vector<int64_t>> pixelsByOffsets;
  std::vector<int64_t> offsets;
  for (int64_t o = 0; o < outPixels; ++o) {
    offsets.clear();
    for (int64_t k = 0; k < kernelPixels; ++k)
      if (taps[static_cast<size_t>(k * outPixels + o)] >= 0) offsets.push_back(k);
    pixelsByOffsets[offsets].push_back(o);
  }
  std::vector<ForwardTapSet> sets;
  for (auto& [inside, pixels] : pixelsByOffsets) {
    ForwardTapSet set;
    set.offsets = inside;
    set.offsetRuns = runsOf(inside.data(), static_cast<int64_t>(inside.size()));
    set.pixels = static_cast<int64_t>(pixels.size());
    set.outputPixels = runsOf(pixels.data(), set.pixels);
    set.inputRuns = inputRunsOf(taps, outPixels, inside, pixels);
    for (const auto& runs : set.inputRuns)
      set.inputRunAt.push_back(runAtEach(runs, set.pixels));
    int64_t lastRun = -1;
    for (int64_t ic = 0; ic < g.CG; ++ic) {
      for (int64_t k : inside) {
        const int64_t run = (ic * kernelPixels + k) / kHalfPartialRun;
        if (run != lastRun) set.runLengths.push_back(0);
        ++set.runLengths.back();
        lastRun = run;
      }
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

std::vector<InputGradientTapSet> inputGradientSets(const ConvGeometry& g,
                                                   const std::vector<int64_t>& taps) {
  const int64_t inPixels = g.in[0] * g.in[1] * g.in[2];
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  // For each input pixel, the taps that read it, by output pixel: (o, k).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> readers(static_cast<size_t>(inPixels));
  for (int64_t o = 0; o < outPixels; ++o) {
    for (int64_t k = 0; k < kernelPixels; ++k) {
      const int64_t pixel = taps[static_cast<size_t>(k * outPixels + o)];
      if (pixel >= 0) readers[static_cast<size_t>(pixel)].emplace_back(o, k);
    }
  }
  std::map<std::vector<int64_t>, std::vector<int64_t>> pixelsByOffsets;
  std::vector<int64_t> offsets;
  for (int64_t pixel = 0; pixel < inPixels; ++pixel) {
    offsets.clear();
    for (const auto& reader : readers[static_cast<size_t>(pixel)])
      offsets.push_back(reader.second);
    pixelsByOffsets[offsets].push_back(pixel);
  }
  std::vector<InputGradientTapSet> sets;
  std::vector<int64_t> read;
  for (auto& [inside, pixels] : pixelsByOffsets) {
    InputGradientTapSet set;
    set.offsets = inside;
    read.resize(pixels.size());
    for (size_t r = 0; r < inside.size(); ++r) {
      for (size_t i = 0; i < pixels.size(); ++i)
        read[i] = readers[static_cast<size_t>(pixels[i])][r].first;
      set.readerRuns.push_back(runsOf(read.data(), static_cast<int64_t>(read.size())));
      set.readerRunAt.push_back(
          runAtEach(set.readerRuns.back(), static_cast<int64_t>(read.size())));
    }
    set.pixels = std::move(pixels);
    sets.push_back(std::move(set));
  }
  return sets;
}

std::vector<WeightGradientTapSet> weightGradientSets(const ConvGeometry& g,
                                                     const std::vector<int64_t>& taps) {
  const int64_t outPixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t kernelPixels = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::map<std::vector<int64_t>, std::vector<int64_t>> offsetsByReads;
  for (int64_t k = 0; k < kernelPixels; ++k) {
    std::vector<int64_t> reads;
    for (int64_t o = 0; o < outPixels; ++o)
      if (taps[static_cast<size_t>(k * outPixels + o)] >= 0) reads.push_back(o);
    offsetsByReads[reads].push_back(k);
  }
  std::vector<WeightGradientTapSet> sets;
  for (const auto& [reads, offsets] : offsetsByReads) {
    WeightGradientTapSet set;
    set.offsets = offsets;
    set.reads = static_cast<int64_t>(reads.size());
    set.outputPixels = runsOf(reads.data(), set.reads);
    set.inputRuns = inputRunsOf(taps, outPixels, offsets, reads);
    sets.push_back(std::move(set));
  }
  return sets;
}

size_t bytesOf(const ConvolutionPlan& plan) {
  size_t bytes = sizeof plan;
  for (const ForwardTapSet& set : plan.forward) {
    bytes += (set.offsets.size() + set.runLengths.size()) * sizeof(int64_t) +
             (set.outputPixels.size() + set.offsetRuns.size()) * sizeof(IndexRun);
    for (const auto& runs : set.inputRuns)
      bytes += runs.size() * sizeof(IndexRun);
    for (const auto& runAt : set.inputRunAt)
      bytes += runAt.size() * sizeof(int32_t);
  }
  for (const InputGradientTapSet& set : plan.inputGradient) {
    bytes += (set.offsets.size() + set.pixels.size()) * sizeof(int64_t);
    for (const auto& runs : set.readerRuns)
      bytes += runs.size() * sizeof(IndexRun);
    for (const auto& runAt : set.readerRunAt)
      bytes += runAt.size() * sizeof(int32_t);
  }
  for (const WeightGradientTapSet& set : plan.weightGradient) {
    bytes += set.offsets.size() * sizeof(int64_t) + set.outputPixels.size() * sizeof(IndexRun);
    for (const auto& runs : set.inputRuns)
      bytes += runs.size() * sizeof(IndexRun);
  }
  return bytes;
}

// Plans a thread keeps, up to this many bytes (a large image's plan is
// megabytes; a model has tens of geometries).
constexpr size_t kKeptPlanBytes = size_t{64} << 20;

struct PlanCache {
  std::map<std::vector<int64_t>, std::shared_ptr<const ConvolutionPlan>> plans;
  size_t bytes = 0;
};

} // namespace

std::vector<IndexRun> runsOf(const int64_t* index, int64_t count) {
  std::vector<IndexRun> runs;
  for (int64_t i = 0; i < count; ++i) {
    if (!runs.empty()) {
      IndexRun& last = runs.back();
      const bool zeros = last.from < 0 && index[i] < 0;
      if (zeros || (last.from >= 0 && index[i] == last.from + last.length)) {
        ++last.length;
        continue;
      }
    }
    runs.push_back({i, index[i] < 0 ? -1 : index[i], 1});
  }
  return runs;
}

std::vector<int32_t> runAtEach(const std::vector<IndexRun>& runs, int64_t count) {
  std::vector<int32_t> runAt(static_cast<size_t>(count));
  for (size_t run = 0; run < runs.size(); ++run)
    std::fill(runAt.begin() + runs[run].start, runAt.begin() + runs[run].start + runs[run].length,
              static_cast<int32_t>(run));
  return runAt;
}

std::shared_ptr<const ConvolutionPlan> convolutionPlan(const ConvGeometry& g) {
  std::vector<int64_t> key = {g.C, g.OC, g.CG, g.OCG};
  for (size_t d = 0; d < 3; ++d) {
    for (int64_t value : {g.in[d], g.kernel[d], g.out[d], g.stride[d], g.padding[d], g.dilation[d]})
      key.push_back(value);
  }
  thread_local PlanCache cache;
  if (auto found = cache.plans.find(key); found != cache.plans.end()) return found->second;
  auto plan = std::make_shared<ConvolutionPlan>();
  const std::vector<int64_t> taps = tapPixels(g);
  plan->forward = forwardSets(g, taps);
  plan->inputGradient = inputGradientSets(g, taps);
  plan->weightGradient = weightGradientSets(g, taps);
  const size_t bytes = bytesOf(*plan);
  if (cache.bytes + bytes > kKeptPlanBytes) {
    cache.plans.clear();
    cache.bytes = 0;
  }
  if (bytes <= kKeptPlanBytes) {
    cache.plans.emplace(std::move(key), plan);
    cache.bytes += bytes;
  }
  return plan;
}

} // namespace popsim::kernels::reference
