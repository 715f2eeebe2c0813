#include "kernels/half_rounding.h"

#include "common/float16.h"
#include "ir/op_schema.h"
#include "kernels/cpu_isa.h"

#if POPSIM_HAS_VECTOR_CLONES
// GCC 12's AVX-512 headers start some conversions from an undefined vector,
// which -Wmaybe-uninitialized reports where they are inlined (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <omp.h>

namespace popsim::kernels {
namespace {

// Large buffers are split over the IPU's threads. Smaller ones stay on the
// calling thread without entering an OpenMP region at all: even a region its
// `if` clause keeps serial costs more than rounding a short row.
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

// The float32 magnitudes (bits without the sign) that stochastic rounding
// takes in integers: zero; float16's normal range, [2^-14, 65504]; and its
// subnormal range down to 2^-54, below which a value's distance to the
// float16 step has more bits than the 53-bit uniform number resolves in a
// 64-bit word. The others (larger, infinite, NaN, or smaller) take the
// scalar stochasticallyRounded.
constexpr uint32_t kHalfNormalSmallest = 0x38800000u;     // 2^-14
constexpr uint32_t kHalfLargest = 0x477fe000u;            // 65504
constexpr uint32_t kIntegerSubnormalSmallest = 73u << 23; // 2^-54

// Stochastic rounding in integers for the magnitudes above, with the same
// results as stochasticallyRounded, which rounds the others. `up`, the
// probability of the float16 neighbour above |x|, is |x|'s distance to the
// neighbour below in units of their gap, and stochasticallyRounded rounds up
// when the 53-bit uniform (random >> 11) / 2^53 is below it:
// - normal range: the gap is one unit of float16's last mantissa bit, so
//   up = t / 2^13 exactly, t = the low 13 of float32's 23 mantissa bits, and
//   the uniform falls below it exactly when its top 13 bits, random >> 51,
//   are below t. Rounding up adds one float16 step to the truncated bits (a
//   carry moves into the exponent: the next binade's first value).
// - subnormal range: the gap is 2^-24. With |x| = S 2^(E-150) (S the 24-bit
//   significand, E the biased exponent) and s = 126 - E in [14, 53], the
//   multiples of the gap below |x| are S >> s and up = (S mod 2^s) / 2^s, so
//   the uniform falls below it exactly when its top s bits, random >> (64 - s),
//   are below S mod 2^s.
// The loops below are this rule element by element, and with AVX-512 or
// AVX2 sixteen or eight elements at a time, hash included.
float stochasticallyRoundedInIntegers(float x, uint64_t random) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude == 0 || (magnitude >= kHalfNormalSmallest && magnitude <= kHalfLargest)) {
    const uint32_t up = static_cast<uint32_t>(random >> 51) < (bits & 0x1fffu) ? 0x2000u : 0u;
    bits = (bits & ~0x1fffu) + up;
    std::memcpy(&x, &bits, sizeof(bits));
    return x;
  }
  if (magnitude < kIntegerSubnormalSmallest || magnitude > kHalfLargest) {
    return stochasticallyRounded(x, random);
  }
  const uint64_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const unsigned shift = 126 - (magnitude >> 23); // 14..53
  const uint64_t below = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t steps = (significand >> shift) + ((random >> (64 - shift)) < below ? 1 : 0);
  const float value = static_cast<float>(steps) * 0x1.0p-24f;
  return std::signbit(x) ? -value : value;
}

void roundStochasticLoop(float* data, int64_t begin, int64_t end, uint64_t stream) {
  for (int64_t i = begin; i < end; ++i)
    data[i] = stochasticallyRoundedInIntegers(data[i], mix(stream + static_cast<uint64_t>(i)));
}

// The lanes a vector loop left as they were (`lanes`, a bit per lane), one
// at a time.
void roundLanesScalar(float* data, int64_t i, unsigned lanes, uint64_t stream) {
  for (int lane = 0; lanes != 0; ++lane, lanes >>= 1) {
    if ((lanes & 1u) != 0) {
      data[i + lane] = stochasticallyRoundedInIntegers(
          data[i + lane], mix(stream + static_cast<uint64_t>(i + lane)));
    }
  }
}

#if POPSIM_HAS_VECTOR_CLONES
POPSIM_TARGET_AVX512 inline __m512i splat512(uint64_t value) {
  return _mm512_set1_epi64(static_cast<int64_t>(value));
}

// mix(stream + first + lane) for the eight lanes, but for mix's last step,
// x ^ (x >> 31) (finishedMix512), which leaves the top 31 bits as they are:
// the normal range reads only the top 13.
POPSIM_TARGET_AVX512 inline __m512i unfinishedMix512(uint64_t stream, int64_t first) {
#define constant splat512
  __m512i x = _mm512_add_epi64(constant(stream + static_cast<uint64_t>(first)),
                               _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
  x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)),
                         constant(0xbf58476d1ce4e5b9ull));
  return _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)),
                            constant(0x94d049bb133111ebull));
#undef constant
}

POPSIM_TARGET_AVX512 inline __m512i finishedMix512(__m512i x) {
  return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

// The subnormal-range rule for eight floats (`words`, their bits) and their
// random words, as 32-bit results (the shift clamped where it does not apply).
POPSIM_TARGET_AVX512 inline __m256i subnormalRounded8(__m256i words, __m512i random) {
#define constant splat512
  const __m512i word = _mm512_cvtepu32_epi64(words);
  const __m512i magnitude = _mm512_and_si512(word, constant(0x7fffffffu));
  const __m512i significand =
      _mm512_or_si512(_mm512_and_si512(magnitude, constant(0x7fffffu)), constant(0x800000u));
  __m512i shift = _mm512_sub_epi64(constant(126), _mm512_srli_epi64(magnitude, 23));
  shift = _mm512_min_epi64(_mm512_max_epi64(shift, constant(14)), constant(53));
  const __m512i below = _mm512_and_si512(
      significand, _mm512_sub_epi64(_mm512_sllv_epi64(constant(1), shift), constant(1)));
  const __mmask8 up = _mm512_cmplt_epu64_mask(
      _mm512_srlv_epi64(random, _mm512_sub_epi64(constant(64), shift)), below);
  __m512i steps = _mm512_srlv_epi64(significand, shift);
  steps = _mm512_mask_add_epi64(steps, up, steps, constant(1));
  const __m256 value =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm512_cvtepi64_epi32(steps)), _mm256_set1_ps(0x1.0p-24f));
  return _mm256_or_si256(_mm256_castps_si256(value),
                         _mm256_and_si256(words, _mm256_set1_epi32(INT32_MIN)));
#undef constant
}

// Sixteen elements at a time: the hash takes 64-bit lanes, two vectors of
// eight, but the normal range needs only each random word's top 13 bits, so
// the rest of the rule runs on sixteen 32-bit lanes; the subnormal range
// (rare in activations, frequent in small gradients) only when a lane is in
// it. In the normal range, rounding up when the top 13 random bits are below
// t, the low 13 of the mantissa, is adding 0x1fff minus those bits (the top
// 13 bits of the complemented word) and truncating: the sum carries into bit
// 13 exactly when t exceeds them.
POPSIM_TARGET_AVX512 void roundStochasticLoopAvx512(float* data, int64_t begin, int64_t end,
                                                    uint64_t stream) {
  const __m512i mantissaLow = _mm512_set1_epi32(0x1fff);
  // The high 32 bits of the sixteen 64-bit lanes of two vectors, in order.
  const __m512i highWords =
      _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i normalSpan =
      _mm512_set1_epi32(static_cast<int>(kHalfLargest - kHalfNormalSmallest));
  const __m512i subnormalSpan =
      _mm512_set1_epi32(static_cast<int>(kHalfNormalSmallest - 1 - kIntegerSubnormalSmallest));
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const __m512i unfinishedLow = unfinishedMix512(stream, i);
    const __m512i unfinishedHigh = unfinishedMix512(stream, i + 8);
    const __m512i complement = _mm512_srli_epi32(
        _mm512_xor_si512(_mm512_permutex2var_epi32(unfinishedLow, highWords, unfinishedHigh),
                         _mm512_set1_epi32(-1)),
        19);
    const __m512i word = _mm512_loadu_si512(data + i);
    const __m512i magnitude = _mm512_and_si512(word, _mm512_set1_epi32(0x7fffffff));
    // Normal range (zero included: it stays zero).
    const __m512i normal = _mm512_andnot_si512(mantissaLow, _mm512_add_epi32(word, complement));
    const __mmask16 isNormal =
        _mm512_cmple_epu32_mask(
            _mm512_sub_epi32(magnitude, _mm512_set1_epi32(static_cast<int>(kHalfNormalSmallest))),
            normalSpan) |
        _mm512_cmpeq_epu32_mask(magnitude, _mm512_setzero_si512());
    const __mmask16 isSubnormal = _mm512_cmple_epu32_mask(
        _mm512_sub_epi32(magnitude, _mm512_set1_epi32(static_cast<int>(kIntegerSubnormalSmallest))),
        subnormalSpan);
    __m512i result = _mm512_mask_blend_epi32(isNormal, word, normal);
    if (isSubnormal != 0) {
      const __m512i subnormal = _mm512_inserti64x4(
          _mm512_castsi256_si512(
              subnormalRounded8(_mm512_castsi512_si256(word), finishedMix512(unfinishedLow))),
          subnormalRounded8(_mm512_extracti64x4_epi64(word, 1), finishedMix512(unfinishedHigh)), 1);
      result = _mm512_mask_blend_epi32(isSubnormal, result, subnormal);
    }
    _mm512_storeu_si512(data + i, result);
    // Lanes outside both ranges (rounding to nearest, or the tiniest) one at a time.
    const unsigned otherLanes = static_cast<unsigned>(~(isNormal | isSubnormal)) & 0xffffu;
    if (otherLanes != 0) roundLanesScalar(data, i, otherLanes, stream);
  }
  roundStochasticLoop(data, i, end, stream);
}

// The low 64 bits of a * b in each lane (AVX2 has no 64-bit multiply).
POPSIM_TARGET_AVX2 inline __m256i multiplyLow64(__m256i a, __m256i b) {
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                         _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}

POPSIM_TARGET_AVX2 inline __m256i splat256(uint64_t value) {
  return _mm256_set1_epi64x(static_cast<int64_t>(value));
}

// The low 32 bits of each 64-bit lane, packed.
POPSIM_TARGET_AVX2 inline __m128i narrow(__m256i v) {
  return _mm256_castsi256_si128(
      _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}

// mix(stream + first + lane) for the four lanes, but for the last step (as
// unfinishedMix512).
POPSIM_TARGET_AVX2 inline __m256i unfinishedMix256(uint64_t stream, int64_t first) {
#define constant splat256
  __m256i x = _mm256_add_epi64(constant(stream + static_cast<uint64_t>(first)),
                               _mm256_set_epi64x(3, 2, 1, 0));
  x = multiplyLow64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 30)), constant(0xbf58476d1ce4e5b9ull));
  return multiplyLow64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 27)),
                       constant(0x94d049bb133111ebull));
#undef constant
}

POPSIM_TARGET_AVX2 inline __m256i finishedMix256(__m256i x) {
  return _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
}

// The subnormal-range rule for four floats (`words`, their bits) and their
// random words, as 32-bit results (the shift clamped where it does not
// apply). Every value compared is under 2^63, so AVX2's signed comparisons
// serve.
POPSIM_TARGET_AVX2 inline __m128i subnormalRounded4(__m128i words, __m256i random) {
#define constant splat256
  const __m256i word = _mm256_cvtepu32_epi64(words);
  const __m256i magnitude = _mm256_and_si256(word, constant(0x7fffffffu));
  const __m256i significand =
      _mm256_or_si256(_mm256_and_si256(magnitude, constant(0x7fffffu)), constant(0x800000u));
  __m256i shift = _mm256_sub_epi64(constant(126), _mm256_srli_epi64(magnitude, 23));
  shift = _mm256_blendv_epi8(shift, constant(14), _mm256_cmpgt_epi64(constant(14), shift));
  shift = _mm256_blendv_epi8(shift, constant(53), _mm256_cmpgt_epi64(shift, constant(53)));
  const __m256i below = _mm256_and_si256(
      significand, _mm256_sub_epi64(_mm256_sllv_epi64(constant(1), shift), constant(1)));
  const __m256i up =
      _mm256_cmpgt_epi64(below, _mm256_srlv_epi64(random, _mm256_sub_epi64(constant(64), shift)));
  const __m256i steps = _mm256_sub_epi64(_mm256_srlv_epi64(significand, shift), up);
  const __m128 value = _mm_mul_ps(_mm_cvtepi32_ps(narrow(steps)), _mm_set1_ps(0x1.0p-24f));
  return _mm_or_si128(_mm_castps_si128(value), _mm_and_si128(words, _mm_set1_epi32(INT32_MIN)));
#undef constant
}

// Eight elements at a time, as the AVX-512 loop does sixteen: the hash in
// two vectors of four 64-bit lanes, the normal range in eight 32-bit lanes
// (every value compared is under 2^31, so the signed comparisons serve), the
// subnormal range only when a lane is in it.
POPSIM_TARGET_AVX2 void roundStochasticLoopAvx2(float* data, int64_t begin, int64_t end,
                                                uint64_t stream) {
  const __m256i mantissaLow = _mm256_set1_epi32(0x1fff);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256i unfinishedLow = unfinishedMix256(stream, i);
    const __m256i unfinishedHigh = unfinishedMix256(stream, i + 4);
    // The high 32 bits of the eight 64-bit lanes, in order: odd words of
    // each 128-bit half of both vectors, then their 64-bit pairs reordered.
    const __m256i highWords =
        _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(
                                     _mm256_castsi256_ps(unfinishedLow),
                                     _mm256_castsi256_ps(unfinishedHigh), _MM_SHUFFLE(3, 1, 3, 1))),
                                 _MM_SHUFFLE(3, 1, 2, 0));
    const __m256i complement =
        _mm256_srli_epi32(_mm256_xor_si256(highWords, _mm256_set1_epi32(-1)), 19);
    const __m256i word = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    const __m256i magnitude = _mm256_and_si256(word, _mm256_set1_epi32(0x7fffffff));
    // Normal range (zero included: it stays zero), as the AVX-512 loop.
    const __m256i normal = _mm256_andnot_si256(mantissaLow, _mm256_add_epi32(word, complement));
    const __m256i isNormal = _mm256_or_si256(
        _mm256_cmpeq_epi32(magnitude, _mm256_setzero_si256()),
        _mm256_and_si256(
            _mm256_cmpgt_epi32(magnitude,
                               _mm256_set1_epi32(static_cast<int>(kHalfNormalSmallest - 1))),
            _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(kHalfLargest + 1)), magnitude)));
    const __m256i isSubnormal = _mm256_and_si256(
        _mm256_cmpgt_epi32(magnitude,
                           _mm256_set1_epi32(static_cast<int>(kIntegerSubnormalSmallest - 1))),
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(kHalfNormalSmallest)), magnitude));
    __m256i result = _mm256_blendv_epi8(word, normal, isNormal);
    if (!_mm256_testz_si256(isSubnormal, isSubnormal)) {
      const __m256i subnormal = _mm256_set_m128i(
          subnormalRounded4(_mm256_extracti128_si256(word, 1), finishedMix256(unfinishedHigh)),
          subnormalRounded4(_mm256_castsi256_si128(word), finishedMix256(unfinishedLow)));
      result = _mm256_blendv_epi8(result, subnormal, isSubnormal);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(data + i), result);
    // Lanes outside both ranges (rounding to nearest, or the tiniest) one at a time.
    const unsigned otherLanes = ~static_cast<unsigned>(_mm256_movemask_ps(
                                    _mm256_castsi256_ps(_mm256_or_si256(isNormal, isSubnormal)))) &
                                0xffu;
    if (otherLanes != 0) roundLanesScalar(data, i, otherLanes, stream);
  }
  roundStochasticLoop(data, i, end, stream);
}
#endif

void roundStochastically(float* data, int64_t begin, int64_t end, uint64_t stream) {
#if POPSIM_HAS_VECTOR_CLONES
  switch (vectorIsa()) {
  case VectorIsa::Avx512: return roundStochasticLoopAvx512(data, begin, end, stream);
  case VectorIsa::Avx2: return roundStochasticLoopAvx2(data, begin, end, stream);
  case VectorIsa::Baseline: break;
  }
#endif
  roundStochasticLoop(data, begin, end, stream);
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

void roundToNearest(float* data, int64_t begin, int64_t end) {
#if POPSIM_HAS_VECTOR_CLONES
  if (useF16c()) return roundToHalfF16c(data, begin, end);
#endif
  for (int64_t i = begin; i < end; ++i)
    data[i] = popsim::roundToHalf(data[i]);
}

} // namespace

HalfRounding HalfRounding::stochastic(uint64_t key, uint64_t draw) {
  return HalfRounding(mix(key ^ mix(draw + 0x9e3779b97f4a7c15ull)));
}

HalfRounding HalfRounding::ofResult(std::optional<uint64_t> stochasticKey, size_t result,
                                    uint64_t draw) {
  return stochasticKey.has_value() ? stochastic(*stochasticKey + result, draw) : toNearest();
}

void HalfRounding::round(float* data, int64_t begin, int64_t end) const {
  if (stream_.has_value()) return roundStochastically(data, begin, end, *stream_);
  roundToNearest(data, begin, end);
}

void HalfRounding::roundAll(float* data, size_t count) const {
  inParts(static_cast<int64_t>(count),
          [&](int64_t begin, int64_t end) { round(data, begin, end); });
}

void roundToHalf(float* data, size_t count) { HalfRounding::toNearest().roundAll(data, count); }

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
  HalfRounding::stochastic(key, draw).roundAll(data, count);
}

HalfRoundingKernel::HalfRoundingKernel(std::unique_ptr<Kernel> inner,
                                       std::vector<BoundTensor> halfOutputs,
                                       std::optional<uint64_t> stochasticKey)
    : inner_(std::move(inner)), halfOutputs_(std::move(halfOutputs)),
      stochasticKey_(stochasticKey) {}

void HalfRoundingKernel::run(dnnl::stream& stream) {
  inner_->run(stream);
  for (size_t k = 0; k < halfOutputs_.size(); ++k) {
    HalfRounding::ofResult(stochasticKey_, k, runs_)
        .roundAll(static_cast<float*>(halfOutputs_[k].data),
                  static_cast<size_t>(halfOutputs_[k].type.numel()));
  }
  ++runs_;
}

std::string HalfRoundingKernel::implementation() const { return inner_->implementation() + "+f16"; }

std::vector<BoundTensor> halfResultsOf(const KernelRequest& request) {
  std::vector<BoundTensor> halfOutputs;
  for (const BoundTensor& output : request.outputs) {
    if (output.type.dtype == ir::DType::Float16) halfOutputs.push_back(output);
  }
  for (size_t input : ir::opSchema(request.node.kind()).mutatedInputs) {
    if (input < request.inputs.size() && request.inputs[input].type.dtype == ir::DType::Float16) {
      halfOutputs.push_back(request.inputs[input]);
    }
  }
  return halfOutputs;
}

std::unique_ptr<Kernel> roundingHalfResults(std::unique_ptr<Kernel> kernel,
                                            const KernelRequest& request) {
  std::vector<BoundTensor> halfOutputs = halfResultsOf(request);
  if (halfOutputs.empty()) return kernel;
  return std::make_unique<HalfRoundingKernel>(std::move(kernel), std::move(halfOutputs),
                                              request.stochasticRoundingKey);
}

} // namespace popsim::kernels
