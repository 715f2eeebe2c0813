// max_pool2d and its training form as PyTorch's CPU kernel computes them,
// vectorised, instead of oneDNN's pooling, for three reasons:
//   - oneDNN 2.6 pools plain (NCHW) tensors with its plain C++ implementation
//     (simple_nchw) on AVX2 CPUs, about ten times slower than this kernel;
//   - oneDNN's maximum drops NaN, where PyTorch's propagates it;
//   - the training form records PyTorch's indices (the first maximum, the
//     last NaN), so max_pool2d_grad adds gradients in PyTorch's order and is
//     bit-identical to eager wherever windows overlap.
//
// Algorithm:
//   1. oneDNN reorders the input into a channel-blocked layout (nChw8c, or
//      nChw16c with AVX-512): each pixel's block of channels is one vector;
//   2. for each output pixel, every window position in PyTorch's row-major
//      order is taken, lane by lane, where it is greater, NaN, or the first
//      inside the input (for the index); the block loop has a constant
//      length, so it compiles to whole-vector compares and blends, whatever
//      the image width;
//   3. oneDNN reorders the output (and the indices) back to NCHW.
// Blocks are split over the IPU's OpenMP threads.
#include "kernels/max_pool_kernel.h"
#include "kernels/cpu_isa.h"
#include "kernels/dnnl_utils.h"

#include "common/check.h"

#include <omp.h>
#if POPSIM_HAS_VECTOR_CLONES
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace popsim::kernels {
namespace {

struct Geometry {
  int64_t blocks; // N x ceil(C / block)
  int64_t H, W, OH, OW;
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
};

Geometry geometryOf(const ir::Node& node, const ir::Shape& in, const ir::Shape& out,
                    int64_t block) {
  const auto& kernel = node.attrs().getInts("kernel");
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  return {in[0] * ((in[1] + block - 1) / block),
          in[2],
          in[3],
          out[2],
          out[3],
          kernel[0],
          kernel[1],
          stride[0],
          stride[1],
          padding[0],
          padding[1],
          dilation[0],
          dilation[1]};
}

// Window taps of one output pixel's block of channels, one vector wide:
// start, take a tap (where it is greater or NaN, or, for indices, the first
// inside the input), and store. One policy per ISA, with intrinsics.
struct PixelScalar {
  static constexpr int kLanes = 8;
  float best[kLanes];
  int32_t at[kLanes];
  PixelScalar() {
    std::fill(best, best + kLanes, -std::numeric_limits<float>::infinity());
    std::fill(at, at + kLanes, -1);
  }
  template <bool kIndices> void take(const float* value, int32_t index) {
    for (int j = 0; j < kLanes; ++j) {
      const bool take = value[j] > best[j] || std::isnan(value[j]) || (kIndices && at[j] < 0);
      best[j] = take ? value[j] : best[j];
      at[j] = take ? index : at[j];
    }
  }
  void store(float* y, int32_t* where) const {
    std::copy(best, best + kLanes, y);
    if (where) std::copy(at, at + kLanes, where);
  }
};

#if POPSIM_HAS_VECTOR_CLONES
struct PixelAvx2 {
  static constexpr int kLanes = 8;
  __m256 best;
  __m256i at;
  POPSIM_TARGET_AVX2 PixelAvx2()
      : best(_mm256_set1_ps(-std::numeric_limits<float>::infinity())), at(_mm256_set1_epi32(-1)) {}
  template <bool kIndices> POPSIM_TARGET_AVX2 void take(const float* p, int32_t index) {
    const __m256 value = _mm256_loadu_ps(p);
    __m256 take = _mm256_or_ps(_mm256_cmp_ps(value, best, _CMP_GT_OQ),
                               _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
    if (kIndices) {
      take =
          _mm256_or_ps(take, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_setzero_si256(), at)));
      at = _mm256_castps_si256(_mm256_blendv_ps(
          _mm256_castsi256_ps(at), _mm256_castsi256_ps(_mm256_set1_epi32(index)), take));
    }
    best = _mm256_blendv_ps(best, value, take);
  }
  POPSIM_TARGET_AVX2 void store(float* y, int32_t* where) const {
    _mm256_storeu_ps(y, best);
    if (where) _mm256_storeu_si256(reinterpret_cast<__m256i*>(where), at);
  }
};

struct PixelAvx512 {
  static constexpr int kLanes = 16;
  __m512 best;
  __m512i at;
  POPSIM_TARGET_AVX512 PixelAvx512()
      : best(_mm512_set1_ps(-std::numeric_limits<float>::infinity())), at(_mm512_set1_epi32(-1)) {}
  template <bool kIndices> POPSIM_TARGET_AVX512 void take(const float* p, int32_t index) {
    const __m512 value = _mm512_loadu_ps(p);
    __mmask16 take = static_cast<__mmask16>(_mm512_cmp_ps_mask(value, best, _CMP_GT_OQ) |
                                            _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q));
    if (kIndices) {
      take = static_cast<__mmask16>(take | _mm512_cmplt_epi32_mask(at, _mm512_setzero_si512()));
      at = _mm512_mask_blend_epi32(take, at, _mm512_set1_epi32(index));
    }
    best = _mm512_mask_blend_ps(take, best, value);
  }
  POPSIM_TARGET_AVX512 void store(float* y, int32_t* where) const {
    _mm512_storeu_ps(y, best);
    if (where) _mm512_storeu_si512(where, at);
  }
};
#endif

// The window taps [first, end) of output `o` that fall inside the input.
struct Taps {
  int64_t first, end;
};
inline Taps tapsInside(int64_t o, int64_t stride, int64_t pad, int64_t dilation, int64_t kernel,
                       int64_t size) {
  const int64_t start = o * stride - pad; // position of tap 0
  const int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t end = start + (kernel - 1) * dilation < size
                          ? kernel
                          : (size - 1 - start) / dilation + 1; // start <= size - 1 always
  return {std::min(first, kernel), std::max(end, first)};
}

// Two neighbouring output pixels with the same taps run interleaved, so the
// compare-and-select chains of both overlap.
template <class Pixel, bool kIndices>
inline __attribute__((always_inline)) void poolBlocks(const Geometry& g, const float* x, float* y,
                                                      int32_t* indices, int64_t begin,
                                                      int64_t end) {
  constexpr int kL = Pixel::kLanes;
  for (int64_t b = begin; b < end; ++b) {
    const float* in = x + b * g.H * g.W * kL;
    const int64_t first = b * g.OH * g.OW * kL;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Taps rows = tapsInside(oh, g.sH, g.pH, g.dH, g.kH, g.H);
      int64_t ow = 0;
      while (ow < g.OW) {
        const Taps cols = tapsInside(ow, g.sW, g.pW, g.dW, g.kW, g.W);
        const bool pair = ow + 1 < g.OW && [&] {
          const Taps next = tapsInside(ow + 1, g.sW, g.pW, g.dW, g.kW, g.W);
          return next.first == cols.first && next.end == cols.end;
        }();
        Pixel p0, p1;
        for (int64_t kh = rows.first; kh < rows.end; ++kh) {
          const int64_t ih = oh * g.sH - g.pH + kh * g.dH;
          for (int64_t kw = cols.first; kw < cols.end; ++kw) {
            const int64_t iw = ow * g.sW - g.pW + kw * g.dW;
            const int64_t at = ih * g.W + iw;
            p0.template take<kIndices>(in + at * kL, static_cast<int32_t>(at));
            if (pair) {
              p1.template take<kIndices>(in + (at + g.sW) * kL, static_cast<int32_t>(at + g.sW));
            }
          }
        }
        const int64_t out = first + (oh * g.OW + ow) * kL;
        p0.store(y + out, kIndices ? indices + out : nullptr);
        if (pair) p1.store(y + out + kL, kIndices ? indices + out + kL : nullptr);
        ow += pair ? 2 : 1;
      }
    }
  }
}

std::string implementationName(VectorIsa isa) {
  return "vectorised:max_pool_" + vectorIsaName(isa);
}

using PoolFunction = void (*)(const Geometry&, const float*, float*, int32_t*, int64_t, int64_t);

template <bool kIndices>
void poolBaseline(const Geometry& g, const float* x, float* y, int32_t* indices, int64_t begin,
                  int64_t end) {
  poolBlocks<PixelScalar, kIndices>(g, x, y, indices, begin, end);
}
#if POPSIM_HAS_VECTOR_CLONES
template <bool kIndices>
POPSIM_TARGET_AVX2 void poolAvx2(const Geometry& g, const float* x, float* y, int32_t* indices,
                                 int64_t begin, int64_t end) {
  poolBlocks<PixelAvx2, kIndices>(g, x, y, indices, begin, end);
}
template <bool kIndices>
POPSIM_TARGET_AVX512 void poolAvx512(const Geometry& g, const float* x, float* y, int32_t* indices,
                                     int64_t begin, int64_t end) {
  poolBlocks<PixelAvx512, kIndices>(g, x, y, indices, begin, end);
}
#endif

template <bool kIndices> PoolFunction poolFunction(VectorIsa isa) {
#if POPSIM_HAS_VECTOR_CLONES
  switch (isa) {
  case VectorIsa::Avx512: return &poolAvx512<kIndices>;
  case VectorIsa::Avx2: return &poolAvx2<kIndices>;
  case VectorIsa::Baseline: break;
  }
#endif
  (void)isa;
  return &poolBaseline<kIndices>;
}

// Step 2 on the blocked copies, which the kernel owns.
class BlockedMaxPool : public Kernel {
public:
  BlockedMaxPool(const Geometry& geometry, const float* x, float* y, int32_t* indices,
                 VectorIsa isa, int64_t block)
      : geometry_(geometry), x_(x), y_(y), indices_(indices), isa_(isa),
        function_(indices ? poolFunction<true>(isa) : poolFunction<false>(isa)),
        // Enough work per thread to pay for waking it: about 16K input elements.
        usefulThreads_(
            std::max<int64_t>(1, std::min(geometry.blocks, geometry.blocks * geometry.H *
                                                               geometry.W * block / 16384))) {}

  void run(dnnl::stream&) override {
    const int64_t blocks = geometry_.blocks;
    // The IPU's share of the host threads is set per call (omp_set_num_threads).
    const int threads = static_cast<int>(std::min<int64_t>(usefulThreads_, omp_get_max_threads()));
    if (threads == 1) {
      function_(geometry_, x_, y_, indices_, 0, blocks);
      return;
    }
#pragma omp parallel num_threads(threads)
    {
      const int64_t thread = omp_get_thread_num();
      const int64_t count = omp_get_num_threads();
      function_(geometry_, x_, y_, indices_, blocks * thread / count,
                blocks * (thread + 1) / count);
    }
  }

  std::string implementation() const override { return implementationName(isa_); }

private:
  Geometry geometry_;
  const float* x_;
  float* y_;
  int32_t* indices_;
  VectorIsa isa_;
  PoolFunction function_;
  int64_t usefulThreads_;
};

// Steps 1-3. The blocked copies are oneDNN memories, owned by the reorders
// that bind them; the implementation is named after step 2.
class MaxPoolKernel : public SequenceKernel {
public:
  explicit MaxPoolKernel(const KernelRequest& request)
      : SequenceKernel(steps(request)), implementation_(implementationName(vectorIsa())) {}

  std::string implementation() const override { return implementation_; }

private:
  static std::vector<std::unique_ptr<Kernel>> steps(const KernelRequest& request) {
    std::vector<std::unique_ptr<Kernel>> steps;
    const ir::Shape& in = request.inputs[0].type.shape;
    const ir::Shape& out = request.outputs[0].type.shape;
    const VectorIsa isa = vectorIsa();
    const int64_t block = channelBlock();
    const dnnl::engine& engine = request.engine;
    const bool indices = request.outputs.size() > 1;
    POPSIM_ASSERT(in[2] * in[3] <= std::numeric_limits<int32_t>::max(), request.node.describe(),
                  ": a plane too large for int32 indices.");

    const memory blockedIn(channelBlockedDesc(in, memory::data_type::f32, block), engine);
    const memory blockedOut(channelBlockedDesc(out, memory::data_type::f32, block), engine);
    steps.push_back(
        reorderKernel(memory(plainDesc(in), engine, request.inputs[0].data), blockedIn, engine));
    std::optional<memory> blockedIndices;
    if (indices) {
      blockedIndices.emplace(channelBlockedDesc(out, memory::data_type::s32, block), engine);
    }
    steps.push_back(std::make_unique<BlockedMaxPool>(
        geometryOf(request.node, in, out, block),
        static_cast<const float*>(blockedIn.get_data_handle()),
        static_cast<float*>(blockedOut.get_data_handle()),
        indices ? static_cast<int32_t*>(blockedIndices->get_data_handle()) : nullptr, isa, block));
    steps.push_back(
        reorderKernel(blockedOut, memory(plainDesc(out), engine, request.outputs[0].data), engine));
    if (indices) {
      steps.push_back(reorderKernel(
          *blockedIndices,
          memory(plainDesc(out, ir::DType::Int32), engine, request.outputs[1].data), engine));
    }
    return steps;
  }

  std::string implementation_;
};

} // namespace

std::unique_ptr<Kernel> createMaxPoolKernel(const KernelRequest& request) {
  if (!ir::isFloat(request.inputs[0].type.dtype) || request.inputs[0].type.shape.size() != 4) {
    return nullptr;
  }
  return std::make_unique<MaxPoolKernel>(request);
}

} // namespace popsim::kernels
