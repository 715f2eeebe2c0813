#pragma once

#include <cstdint>
#include <cstring>

// IEEE binary16 (the IPU's float16) conversions, one value at a time. Float
// to half rounds to nearest, ties to even, as the IPU's conversions do:
// values at or beyond 65520 in magnitude become infinities, values below
// 2^-24 flush through the subnormals to signed zero, NaN stays NaN. The
// vectorised forms over buffers are in kernels/half_rounding.h.
namespace popsim {

inline uint16_t floatToHalfBits(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x47800000u) { // 65536 and beyond, infinities and NaN
    const bool nan = magnitude > 0x7f800000u;
    return static_cast<uint16_t>(sign | (nan ? 0x7e00u : 0x7c00u));
  }
  if (magnitude < 0x38800000u) { // below 2^-14: a subnormal half or zero
    // Adding 0.5 scales the value's bits so that the float addition itself
    // rounds (to nearest even) at the half subnormal's last place, 2^-24.
    float scaled = 0.0f;
    std::memcpy(&scaled, &magnitude, sizeof scaled);
    scaled += 0.5f;
    uint32_t rounded = 0;
    std::memcpy(&rounded, &scaled, sizeof rounded);
    return static_cast<uint16_t>(sign | (rounded - 0x3f000000u));
  }
  // A normal half: rebias the exponent (127 -> 15) and round the 13 dropped
  // mantissa bits to nearest even; a carry may round up to the infinity.
  const uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += 0xc8000fffu + odd;
  return static_cast<uint16_t>(sign | (magnitude >> 13));
}

inline float halfBitsToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  uint32_t bits = 0;
  if (exponent == 0) { // zero or subnormal: mantissa x 2^-24, exact in float
    float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &value, sizeof bits);
    bits |= sign;
  } else if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float result = 0.0f;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

// The float16 value nearest to `value`, as a float.
inline float roundToHalf(float value) { return halfBitsToFloat(floatToHalfBits(value)); }

} // namespace popsim
