#include "kernels/half_rounding.h"

#include "common/float16.h"
#include "ir/op_schema.h"
#include "kernels/cpu_isa.h"

#if POPSIM_HAS_VECTOR_CLONES
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <omp.h>

namespace popsim::kernels {
namespace {

// Large buffers are split over the IPU's threads. Smaller ones stay on the
// calling thread without entering an OpenMP region at all: even a region its
// `if` clause keeps serial costs more than rounding a short row, and the
// float16-partials kernels round a row of partial sums every 16 products.
constexpr int64_t kParallelElements = int64_t{1} << 16;

// Runs rangeOf(begin, end) over [0, count): once on the calling thread, or
// for large counts on one contiguous part per OpenMP thread. Every loop here
// is elementwise (stochastic rounding draws by element index), so the parts
// give the same results as one pass.
template <typename Range> void inParts(int64_t count, Range&& rangeOf) {
  if (count < kParallelElements) {
    rangeOf(int64_t{0}, count);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads();
    const int64_t part = (count + threads - 1) / threads;
    const int64_t begin = std::min(count, part * omp_get_thread_num());
    rangeOf(begin, std::min(count, begin + part));
  }
}

#if POPSIM_HAS_VECTOR_CLONES
__attribute__((target("avx2,f16c"))) void roundToHalfF16c(float* data, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(half));
  }
  for (; i < end; ++i)
    data[i] = popsim::roundToHalf(data[i]);
}

__attribute__((target("avx2,f16c"))) void halfToFloatF16c(const uint16_t* in, float* out,
                                                          int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(half));
  }
  for (; i < end; ++i)
    out[i] = halfBitsToFloat(in[i]);
}

__attribute__((target("avx2,f16c"))) void floatToHalfF16c(const float* in, uint16_t* out,
                                                          int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  for (; i < end; ++i)
    out[i] = floatToHalfBits(in[i]);
}
#endif

// SplitMix64's finaliser: a well-mixed 64-bit hash of a counter.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// x rounded to the float16 value below or above it (in magnitude), the one
// above with probability (|x| - low) / (high - low). Exact values, NaN,
// infinities and magnitudes beyond 65504 round to nearest.
float stochasticallyRounded(float x, uint64_t random) {
  const float nearest = popsim::roundToHalf(x);
  if (nearest == x || !(std::fabs(x) <= 65504.0f)) return nearest;
  const uint16_t bits = floatToHalfBits(nearest);
  const bool nearestAbove = std::fabs(nearest) > std::fabs(x);
  // Sign and magnitude: one step of the magnitude bits is the next float16 value.
  const float other = halfBitsToFloat(static_cast<uint16_t>(nearestAbove ? bits - 1 : bits + 1));
  const double low = std::fabs(nearestAbove ? other : nearest);
  const double high = std::fabs(nearestAbove ? nearest : other);
  const double up = (std::fabs(static_cast<double>(x)) - low) / (high - low);
  const double uniform = static_cast<double>(random >> 11) * 0x1.0p-53;
  return uniform < up ? (nearestAbove ? nearest : other) : (nearestAbove ? other : nearest);
}

bool useF16c() {
#if POPSIM_HAS_VECTOR_CLONES
  static const bool available = vectorIsa() != VectorIsa::Baseline &&
                                __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  return available;
#else
  return false;
#endif
}

} // namespace

void roundToHalf(float* data, size_t count) {
  inParts(static_cast<int64_t>(count), [&](int64_t begin, int64_t end) {
#if POPSIM_HAS_VECTOR_CLONES
    if (useF16c()) return roundToHalfF16c(data, begin, end);
#endif
    for (int64_t i = begin; i < end; ++i)
      data[i] = popsim::roundToHalf(data[i]);
  });
}

void halfToFloat(const uint16_t* in, float* out, size_t count) {
  inParts(static_cast<int64_t>(count), [&](int64_t begin, int64_t end) {
#if POPSIM_HAS_VECTOR_CLONES
    if (useF16c()) return halfToFloatF16c(in, out, begin, end);
#endif
    for (int64_t i = begin; i < end; ++i)
      out[i] = halfBitsToFloat(in[i]);
  });
}

void floatToHalf(const float* in, uint16_t* out, size_t count) {
  inParts(static_cast<int64_t>(count), [&](int64_t begin, int64_t end) {
#if POPSIM_HAS_VECTOR_CLONES
    if (useF16c()) return floatToHalfF16c(in, out, begin, end);
#endif
    for (int64_t i = begin; i < end; ++i)
      out[i] = floatToHalfBits(in[i]);
  });
}

void roundToHalfStochastically(float* data, size_t count, uint64_t key, uint64_t draw) {
  const uint64_t stream = mix(key ^ mix(draw + 0x9e3779b97f4a7c15ull));
  inParts(static_cast<int64_t>(count), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      data[i] = stochasticallyRounded(data[i], mix(stream + static_cast<uint64_t>(i)));
  });
}

HalfRoundingKernel::HalfRoundingKernel(std::unique_ptr<Kernel> inner,
                                       std::vector<BoundTensor> halfOutputs,
                                       std::optional<uint64_t> stochasticKey)
    : inner_(std::move(inner)), halfOutputs_(std::move(halfOutputs)),
      stochasticKey_(stochasticKey) {}

void HalfRoundingKernel::run(dnnl::stream& stream) {
  inner_->run(stream);
  for (size_t k = 0; k < halfOutputs_.size(); ++k) {
    auto* data = static_cast<float*>(halfOutputs_[k].data);
    const auto count = static_cast<size_t>(halfOutputs_[k].type.numel());
    if (stochasticKey_.has_value()) {
      roundToHalfStochastically(data, count, *stochasticKey_ + k, runs_);
    } else {
      roundToHalf(data, count);
    }
  }
  ++runs_;
}

std::string HalfRoundingKernel::implementation() const { return inner_->implementation() + "+f16"; }

std::unique_ptr<Kernel> roundingHalfResults(std::unique_ptr<Kernel> kernel,
                                            const KernelRequest& request) {
  std::vector<BoundTensor> halfOutputs;
  for (const BoundTensor& output : request.outputs) {
    if (output.type.dtype == ir::DType::Float16) halfOutputs.push_back(output);
  }
  for (size_t input : ir::opSchema(request.node.kind()).mutatedInputs) {
    if (input < request.inputs.size() && request.inputs[input].type.dtype == ir::DType::Float16) {
      halfOutputs.push_back(request.inputs[input]);
    }
  }
  if (halfOutputs.empty()) return kernel;
  return std::make_unique<HalfRoundingKernel>(std::move(kernel), std::move(halfOutputs),
                                              request.stochasticRoundingKey);
}

} // namespace popsim::kernels
