#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <vector>

namespace popsim::kernels::reference {
namespace {

// One slice along the axis: element k is at data[k * stride].
template <typename T> struct Slice {
  T* data;
  int64_t stride;
  T& operator[](int64_t k) const { return data[k * stride]; }
};

template <typename Fn> void forEachSlice(const AxisSplit& s, Fn fn) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      fn(o * s.size * s.inner + i, o * s.inner + i);
    }
  }
}

// Products along the axis in `Accumulator` (double for floats, as PyTorch's
// CPU cumprod; integers wrap as int64 arithmetic does in PyTorch): the
// running products, or only the last one.
template <typename T, typename Accumulator>
void products(const T* x, T* y, const AxisSplit& s, bool running) {
  forEachSlice(s, [&](int64_t first, int64_t reduced) {
    const Slice<const T> in{x + first, s.inner};
    Accumulator product = 1;
    for (int64_t k = 0; k < s.size; ++k) {
      product *= static_cast<Accumulator>(in[k]);
      if (running) y[first + k * s.inner] = static_cast<T>(product);
    }
    if (!running) y[reduced] = static_cast<T>(product);
  });
}

// The gradient of prod along the axis, as PyTorch's prod_backward: dy * y / x
// when no element of the whole input is zero; otherwise dy times the product
// of the elements before and of the elements after (each a running product
// in double), so a single zero gets the product of the others.
void productGrad(const float* dy, const float* x, const float* y, float* dx, const AxisSplit& s,
                 bool anyZero) {
  std::vector<float> before(static_cast<size_t>(s.size));
  forEachSlice(s, [&](int64_t first, int64_t reduced) {
    const Slice<const float> in{x + first, s.inner};
    const Slice<float> out{dx + first, s.inner};
    if (!anyZero) {
      for (int64_t k = 0; k < s.size; ++k)
        out[k] = dy[reduced] * (y[reduced] / in[k]);
      return;
    }
    double product = 1.0;
    for (int64_t k = 0; k < s.size; ++k) {
      before[static_cast<size_t>(k)] = static_cast<float>(product);
      product *= static_cast<double>(in[k]);
    }
    product = 1.0;
    for (int64_t k = s.size - 1; k >= 0; --k) {
      out[k] = dy[reduced] * (before[static_cast<size_t>(k)] * static_cast<float>(product));
      product *= static_cast<double>(in[k]);
    }
  });
}

// The gradient of cumprod along the axis, as PyTorch's cumprod_backward.
// Without zeros in the input: the running sum from the end of y * dy,
// divided by x. With zeros, per slice with its first zero at z: elements
// before z as above over the terms before z; the element z gets
// y[z - 1] * sum over j in [z, next zero) of dy[j] * prod(x in (z, j]);
// elements after z get zero.
void cumulativeProductGrad(const float* dy, const float* x, const float* y, float* dx,
                           const AxisSplit& s, bool anyZero) {
  forEachSlice(s, [&](int64_t first, int64_t) {
    const Slice<const float> in{x + first, s.inner};
    const Slice<const float> grad{dy + first, s.inner};
    const Slice<const float> result{y + first, s.inner};
    const Slice<float> out{dx + first, s.inner};
    if (s.size == 1) { // y = x: the gradient passes as is
      out[0] = grad[0];
      return;
    }
    int64_t zero = s.size; // the first zero, or the end
    if (anyZero) {
      for (int64_t k = 0; k < s.size && zero == s.size; ++k)
        if (in[k] == 0.0f) zero = k;
    }
    double sum = 0.0;
    for (int64_t k = s.size - 1; k >= 0; --k) {
      if (k < zero) {
        sum += static_cast<double>(result[k] * grad[k]);
        out[k] = static_cast<float>(sum) / in[k];
      } else {
        out[k] = 0.0f;
      }
    }
    if (zero == s.size) return;
    // The running product of the elements after the first zero (up to the
    // next zero, as x there is 1), each paired with dy while before the next zero.
    float total = 0.0f;
    double product = 1.0;
    bool beforeNextZero = true;
    for (int64_t j = zero; j < s.size; ++j) {
      if (j > zero && in[j] == 0.0f) beforeNextZero = false;
      if (j > zero && beforeNextZero) product *= static_cast<double>(in[j]);
      total += static_cast<float>(product) * (beforeNextZero ? grad[j] : 0.0f);
    }
    out[zero] = total * (zero == 0 ? 1.0f : result[zero - 1]);
  });
}

} // namespace

void product(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const bool gradient = node.kind() == ir::OpKind::ReduceProductGrad ||
                        node.kind() == ir::OpKind::CumulativeProductGrad;
  const ir::TensorType& type = node.input(gradient ? 1 : 0)->type();
  const AxisSplit s = splitAroundAxis(type.shape, node.attrs().getInt("dim"));
  if (gradient) {
    const auto* x = static_cast<const float*>(inputs[1]);
    const bool anyZero = std::any_of(x, x + type.numel(), [](float v) { return v == 0.0f; });
    const auto* dy = static_cast<const float*>(inputs[0]);
    const auto* y = static_cast<const float*>(inputs[2]);
    auto* dx = static_cast<float*>(outputs[0]);
    if (node.kind() == ir::OpKind::ReduceProductGrad) return productGrad(dy, x, y, dx, s, anyZero);
    return cumulativeProductGrad(dy, x, y, dx, s, anyZero);
  }
  const bool running = node.kind() == ir::OpKind::CumulativeProduct;
  if (type.dtype == ir::DType::Int64) {
    return products<int64_t, uint64_t>(static_cast<const int64_t*>(inputs[0]),
                                       static_cast<int64_t*>(outputs[0]), s, running);
  }
  products<float, double>(static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]), s,
                          running);
}

} // namespace popsim::kernels::reference
