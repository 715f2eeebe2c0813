#include "kernels/half_rounding.h"

#include "common/float16.h"
#include "ir/op_schema.h"
#include "kernels/cpu_isa.h"

#if POPSIM_HAS_VECTOR_CLONES
#include <immintrin.h>
#endif

namespace popsim::kernels {
namespace {

// Large buffers are split over the IPU's threads.
constexpr int64_t kParallelElements = int64_t{1} << 16;

#if POPSIM_HAS_VECTOR_CLONES
__attribute__((target("avx2,f16c"))) void roundToHalfF16c(float* data, int64_t count) {
  const int64_t vectorEnd = count - count % 8;
#pragma omp parallel for if (count >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < vectorEnd; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(half));
  }
  for (int64_t i = vectorEnd; i < count; ++i) {
    data[i] = popsim::roundToHalf(data[i]);
  }
}

__attribute__((target("avx2,f16c"))) void halfToFloatF16c(const uint16_t* in, float* out,
                                                          int64_t count) {
  const int64_t vectorEnd = count - count % 8;
#pragma omp parallel for if (count >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < vectorEnd; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(half));
  }
  for (int64_t i = vectorEnd; i < count; ++i) {
    out[i] = halfBitsToFloat(in[i]);
  }
}

__attribute__((target("avx2,f16c"))) void floatToHalfF16c(const float* in, uint16_t* out,
                                                          int64_t count) {
  const int64_t vectorEnd = count - count % 8;
#pragma omp parallel for if (count >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < vectorEnd; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  for (int64_t i = vectorEnd; i < count; ++i) {
    out[i] = floatToHalfBits(in[i]);
  }
}
#endif

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
  const auto n = static_cast<int64_t>(count);
#if POPSIM_HAS_VECTOR_CLONES
  if (useF16c()) return roundToHalfF16c(data, n);
#endif
#pragma omp parallel for if (n >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    data[i] = popsim::roundToHalf(data[i]);
  }
}

void halfToFloat(const uint16_t* in, float* out, size_t count) {
  const auto n = static_cast<int64_t>(count);
#if POPSIM_HAS_VECTOR_CLONES
  if (useF16c()) return halfToFloatF16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) {
    out[i] = halfBitsToFloat(in[i]);
  }
}

void floatToHalf(const float* in, uint16_t* out, size_t count) {
  const auto n = static_cast<int64_t>(count);
#if POPSIM_HAS_VECTOR_CLONES
  if (useF16c()) return floatToHalfF16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) {
    out[i] = floatToHalfBits(in[i]);
  }
}

HalfRoundingKernel::HalfRoundingKernel(std::unique_ptr<Kernel> inner,
                                       std::vector<BoundTensor> halfOutputs)
    : inner_(std::move(inner)), halfOutputs_(std::move(halfOutputs)) {}

void HalfRoundingKernel::run(dnnl::stream& stream) {
  inner_->run(stream);
  for (const BoundTensor& output : halfOutputs_) {
    roundToHalf(static_cast<float*>(output.data), static_cast<size_t>(output.type.numel()));
  }
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
  return std::make_unique<HalfRoundingKernel>(std::move(kernel), std::move(halfOutputs));
}

} // namespace popsim::kernels
