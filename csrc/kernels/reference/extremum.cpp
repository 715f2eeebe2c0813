#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace popsim::kernels::reference {
namespace {

enum class Statistic { Max, Min, Median, NanMedian };

Statistic statisticNamed(const std::string& function) {
  if (function == "max") return Statistic::Max;
  if (function == "min") return Statistic::Min;
  if (function == "median") return Statistic::Median;
  POPSIM_ASSERT(function == "nanmedian", "unknown order statistic '", function, "'.");
  return Statistic::NanMedian;
}

// PyTorch's order for max and min: NaN beats every number (the first NaN
// wins), otherwise strictly larger (smaller) values replace the best so far,
// so the first of equal extrema is kept.
template <typename T> int64_t firstExtremum(const T* x, int64_t size, int64_t inner, bool max) {
  int64_t best = 0;
  for (int64_t k = 1; k < size; ++k) {
    const T v = x[k * inner];
    const T b = x[best * inner];
    if (b == b && (v != v || (max ? v > b : v < b))) best = k;
  }
  return best;
}

// PyTorch's median along a dimension: the first NaN if there is one (median)
// or NaNs put last (nanmedian); otherwise the element of rank (n - 1) / 2 of
// the numbers ordered by value and then by position, so of equal values the
// one PyTorch's CPU kernel returns. `order` is scratch space.
template <typename T>
int64_t median(const T* x, int64_t size, int64_t inner, bool ignoreNaN,
               std::vector<int64_t>& order) {
  const auto at = [&](int64_t k) { return x[k * inner]; };
  int64_t nans = 0;
  for (int64_t k = 0; k < size; ++k) {
    if (at(k) != at(k)) {
      if (!ignoreNaN) return k;
      ++nans;
    }
  }
  order.resize(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto nth = order.begin() + (size - nans - 1) / 2;
  std::nth_element(order.begin(), nth, order.end(), [&](int64_t i, int64_t j) {
    const T a = at(i);
    const T b = at(j);
    return a < b || (a == b && i < j) || (b != b && a == a);
  });
  return *nth;
}

// Position (0..size-1) of the statistic in one slice.
template <typename T>
int64_t chosen(const T* x, int64_t size, int64_t inner, Statistic statistic,
               std::vector<int64_t>& order) {
  switch (statistic) {
  case Statistic::Max: return firstExtremum(x, size, inner, true);
  case Statistic::Min: return firstExtremum(x, size, inner, false);
  case Statistic::Median: return median(x, size, inner, false, order);
  case Statistic::NanMedian: return median(x, size, inner, true, order);
  }
  return 0;
}

// reduce_extremum and arg_extremum of a float (float16 in float32
// carriers), int32 or int64 tensor: PyTorch orders integers too.
template <typename T>
void statisticOf(const ir::Node& node, const T* x, Statistic statistic, const AxisSplit& s,
                 void* output) {
  std::vector<int64_t> order;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t reduced = o * s.inner + i;
      const T* slice = x + o * s.size * s.inner + i;
      const int64_t position = chosen(slice, s.size, s.inner, statistic, order);
      if (node.kind() == ir::OpKind::ArgExtremum) {
        static_cast<int64_t*>(output)[reduced] = position;
      } else {
        static_cast<T*>(output)[reduced] = slice[position * s.inner];
      }
    }
  }
}

// reduce_extremum_grad: dY to the chosen element(s) of X.
void extremumGradient(const ir::Node& node, const Inputs& inputs, float* dxAll, Statistic statistic,
                      const AxisSplit& s) {
  const auto* x = static_cast<const float*>(inputs[1]);
  const std::string& ties = node.attrs().getString("ties");
  std::vector<int64_t> order;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t reduced = o * s.inner + i;
      const float* slice = x + o * s.size * s.inner + i;
      const float dy = static_cast<const float*>(inputs[0])[reduced];
      float* dx = dxAll + o * s.size * s.inner + i;
      if (ties == "first") { // all to the value's index
        const int64_t index = chosen(slice, s.size, s.inner, statistic, order);
        for (int64_t k = 0; k < s.size; ++k)
          dx[k * s.inner] = k == index ? dy : 0.0f;
        continue;
      }
      const float y = static_cast<const float*>(inputs[2])[reduced];
      if (ties == "split_nan") {
        // PyTorch's even distribution: dy / count into the elements equal
        // to the result (the NaNs for a NaN result), exact zeros elsewhere.
        const auto isChosen = [&](float v) { return y != y ? v != v : v == y; };
        int64_t count = 0;
        for (int64_t k = 0; k < s.size; ++k)
          count += isChosen(slice[k * s.inner]) ? 1 : 0;
        const float share = dy / static_cast<float>(count);
        for (int64_t k = 0; k < s.size; ++k)
          dx[k * s.inner] = isChosen(slice[k * s.inner]) ? share : 0.0f;
        continue;
      }
      // Split evenly between the elements equal to the result, as PyTorch's
      // (dy / count) * mask, which is NaN throughout a slice whose result is NaN.
      int64_t count = 0;
      for (int64_t k = 0; k < s.size; ++k)
        count += slice[k * s.inner] == y ? 1 : 0;
      const float share = dy / static_cast<float>(count);
      for (int64_t k = 0; k < s.size; ++k)
        dx[k * s.inner] = share * (slice[k * s.inner] == y ? 1.0f : 0.0f);
    }
  }
}

} // namespace

// reduce_extremum, reduce_extremum_grad and arg_extremum along one dimension.
void extremum(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const bool gradient = node.kind() == ir::OpKind::ReduceExtremumGrad;
  const ir::TensorType& type = node.input(gradient ? 1 : 0)->type();
  const Statistic statistic = statisticNamed(node.attrs().getString("function"));
  const AxisSplit s = splitAroundAxis(type.shape, node.attrs().getInt("dim"));
  if (gradient) {
    return extremumGradient(node, inputs, static_cast<float*>(outputs[0]), statistic, s);
  }
  switch (type.dtype) {
  case ir::DType::Int64:
    return statisticOf(node, static_cast<const int64_t*>(inputs[0]), statistic, s, outputs[0]);
  case ir::DType::Int32:
    return statisticOf(node, static_cast<const int32_t*>(inputs[0]), statistic, s, outputs[0]);
  default: return statisticOf(node, static_cast<const float*>(inputs[0]), statistic, s, outputs[0]);
  }
}

} // namespace popsim::kernels::reference
