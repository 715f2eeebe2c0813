#include "kernels/reference/fast_binary_functions.h"

#include <utility>

namespace popsim::kernels::reference {
namespace {

// The loop over one piece, specialised for the strides broadcasting gives
// (both contiguous, or one operand a broadcast scalar).
template <typename Out, typename F>
void piece(const float* a, int64_t sa, const float* b, int64_t sb, void* out, int64_t n, F f) {
  Out* y = static_cast<Out*>(out);
  if (sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j)
      y[j] = f(a[j], b[j]);
  } else if (sa == 1 && sb == 0) {
    const float scalar = b[0];
    for (int64_t j = 0; j < n; ++j)
      y[j] = f(a[j], scalar);
  } else if (sa == 0 && sb == 1) {
    const float scalar = a[0];
    for (int64_t j = 0; j < n; ++j)
      y[j] = f(scalar, b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j)
      y[j] = f(a[j * sa], b[j * sb]);
  }
}

// NaN-propagating maximum and minimum (x != x is NaN without a libm call).
inline float maximum(float a, float b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
inline float minimum(float a, float b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }

#define POPSIM_FAST(name, Out, expression)                                                         \
  {                                                                                                \
    name, [](const float* a, int64_t sa, const float* b, int64_t sb, void* y, int64_t n) {         \
      piece<Out>(a, sa, b, sb, y, n, [](float x, float z) -> Out { return expression; });          \
    }                                                                                              \
  }

const std::pair<std::string_view, FastBinaryPiece> kFastPieces[] = {
    POPSIM_FAST("eq", bool, x == z),
    POPSIM_FAST("ne", bool, x != z),
    POPSIM_FAST("lt", bool, x < z),
    POPSIM_FAST("le", bool, x <= z),
    POPSIM_FAST("gt", bool, x > z),
    POPSIM_FAST("ge", bool, x >= z),
    POPSIM_FAST("logical_and", bool, x != 0.0f && z != 0.0f),
    POPSIM_FAST("logical_or", bool, x != 0.0f || z != 0.0f),
    POPSIM_FAST("logical_xor", bool, (x != 0.0f) != (z != 0.0f)),
    POPSIM_FAST("maximum", float, maximum(x, z)),
    POPSIM_FAST("minimum", float, minimum(x, z)),
    POPSIM_FAST("clamp_min", float, maximum(x, z)),
    POPSIM_FAST("clamp_max", float, minimum(x, z)),
    POPSIM_FAST("fmax", float, x >= z || z != z ? x : z),
    POPSIM_FAST("fmin", float, x <= z || z != z ? x : z),
};

#undef POPSIM_FAST

} // namespace

FastBinaryPiece findFastBinaryPiece(std::string_view name) {
  for (const auto& [pieceName, loop] : kFastPieces) {
    if (pieceName == name) return loop;
  }
  return nullptr;
}

} // namespace popsim::kernels::reference
