#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace popsim::kernels::reference {
namespace {

// Calls body(base) for every line along the axis: element k of the line
// starting at base is at base + k * s.inner.
template <typename Body> void forEachLine(const AxisSplit& s, Body&& body) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      body(o * s.size * s.inner + i);
    }
  }
}

// Running sums along the axis, accumulated as PyTorch's CPU kernel does
// (double for floats, int64 for integers), from the end when reversed.
template <typename T, typename Accumulator>
void runningSums(const T* x, T* y, const AxisSplit& s, bool reverse) {
  forEachLine(s, [&](int64_t base) {
    Accumulator sum = 0;
    for (int64_t step = 0; step < s.size; ++step) {
      const int64_t k = reverse ? s.size - 1 - step : step;
      sum += static_cast<Accumulator>(x[base + k * s.inner]);
      y[base + k * s.inner] = static_cast<T>(sum);
    }
  });
}

template <typename T> bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// cummax / cummin as PyTorch's CPU kernel: the running value moves to the
// current element when that is NaN, or when neither is NaN and the element
// is >= (max) or <= (min) it, so ties take the later position.
template <typename T>
void runningExtrema(const T* x, T* values, int64_t* indices, const AxisSplit& s, bool max) {
  forEachLine(s, [&](int64_t base) {
    if (s.size == 0) return;
    T best = x[base];
    int64_t at = 0;
    for (int64_t k = 0; k < s.size; ++k) {
      const T v = x[base + k * s.inner];
      if (isNan(v) || (!isNan(best) && (max ? v >= best : v <= best))) {
        best = v;
        at = k;
      }
      values[base + k * s.inner] = best;
      indices[base + k * s.inner] = at;
    }
  });
}

// log(exp(a) + exp(b)) as PyTorch's logcumsumexp computes it (in double):
// NaN in either propagates, and equal infinities give themselves.
double logAddExp(double x, double y) {
  const double low = std::isnan(y) ? y : std::min(x, y);
  const double high = std::isnan(y) ? y : std::max(x, y);
  if (low != high || std::isfinite(low)) return std::log1p(std::exp(low - high)) + high;
  return x;
}

void logCumulativeSumExp(const float* x, float* y, const AxisSplit& s) {
  forEachLine(s, [&](int64_t base) {
    double running = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < s.size; ++k) {
      running = logAddExp(static_cast<double>(x[base + k * s.inner]), running);
      y[base + k * s.inner] = static_cast<float>(running);
    }
  });
}

// dX_i = sum over j >= i of dY_j exp(X_i - Y_j). PyTorch's formula keeps it
// finite where exp(-Y_j) alone would overflow: the positive and the negative
// parts of dY run as reversed log-cumulative-sum-exps of log|dY_j| - Y_j
// (the lowest float standing for log 0), and X_i is added before the exp.
void logCumulativeSumExpGrad(const float* dy, const float* x, const float* y, float* dx,
                             const AxisSplit& s) {
  const double lowest = std::numeric_limits<float>::lowest();
  forEachLine(s, [&](int64_t base) {
    double positive = -std::numeric_limits<double>::infinity();
    double negative = positive;
    for (int64_t k = s.size - 1; k >= 0; --k) {
      const int64_t at = base + k * s.inner;
      const double g = dy[at];
      const double logMagnitude = std::log(std::fabs(g));
      positive = logAddExp((g > 0 ? logMagnitude : lowest) - y[at], positive);
      negative = logAddExp((g < 0 ? logMagnitude : lowest) - y[at], negative);
      dx[at] = static_cast<float>(std::exp(positive + x[at]) - std::exp(negative + x[at]));
    }
  });
}

} // namespace

void scan(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const bool gradient = node.kind() == ir::OpKind::LogCumulativeSumExpGrad;
  const ir::TensorType& type = node.input(gradient ? 1 : 0)->type();
  const AxisSplit s = splitAroundAxis(type.shape, node.attrs().getInt("dim"));
  switch (node.kind()) {
  case ir::OpKind::CumulativeSum: {
    const bool reverse = node.attrs().getBool("reverse");
    if (type.dtype == ir::DType::Int64) {
      return runningSums<int64_t, int64_t>(static_cast<const int64_t*>(inputs[0]),
                                           static_cast<int64_t*>(outputs[0]), s, reverse);
    }
    return runningSums<float, double>(static_cast<const float*>(inputs[0]),
                                      static_cast<float*>(outputs[0]), s, reverse);
  }
  case ir::OpKind::CumulativeExtremum: {
    const bool max = node.attrs().getString("function") == "max";
    auto* indices = static_cast<int64_t*>(outputs[1]);
    if (type.dtype == ir::DType::Int64) {
      return runningExtrema(static_cast<const int64_t*>(inputs[0]),
                            static_cast<int64_t*>(outputs[0]), indices, s, max);
    }
    if (type.dtype == ir::DType::Int32) {
      return runningExtrema(static_cast<const int32_t*>(inputs[0]),
                            static_cast<int32_t*>(outputs[0]), indices, s, max);
    }
    return runningExtrema(static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]),
                          indices, s, max);
  }
  case ir::OpKind::LogCumulativeSumExp:
    return logCumulativeSumExp(static_cast<const float*>(inputs[0]),
                               static_cast<float*>(outputs[0]), s);
  case ir::OpKind::LogCumulativeSumExpGrad:
    return logCumulativeSumExpGrad(
        static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
        static_cast<const float*>(inputs[2]), static_cast<float*>(outputs[0]), s);
  default: POPSIM_ASSERT(false, "scan: unexpected op ", ir::opKindName(node.kind()), ".");
  }
}

} // namespace popsim::kernels::reference
