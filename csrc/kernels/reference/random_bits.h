#pragma once

#include <cstdint>

namespace popsim::kernels::reference {

// SplitMix64's finaliser: a bijective mix with good avalanche.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64 random bits from a counter-based generator: the same key always gives
// the same bits, with no state to carry between calls.
inline uint64_t randomBits(uint64_t seed, uint64_t stream, uint64_t counter, uint64_t index) {
  const uint64_t key = mix64(mix64(mix64(seed ^ 0x9E3779B97F4A7C15ull) ^ stream) ^ counter) ^ index;
  return mix64(key);
}

// A uniform number in [0, 1) from the top 53 of those bits.
inline double uniformBits(uint64_t seed, uint64_t stream, uint64_t counter, uint64_t index) {
  return static_cast<double>(randomBits(seed, stream, counter, index) >> 11) * 0x1.0p-53;
}

} // namespace popsim::kernels::reference
