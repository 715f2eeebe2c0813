#include "kernels/nonfinite_fixups.h"

#include <cmath>
#include <limits>

namespace popsim::kernels {
namespace {

class NanPassThrough : public Kernel {
public:
  NanPassThrough(const float* x, float* y, int64_t count) : x_(x), y_(y), count_(count) {}
  void run(dnnl::stream&) override {
    const float* __restrict x = x_;
    float* __restrict y = y_;
    for (int64_t i = 0; i < count_; ++i) {
      y[i] = x[i] != x[i] ? x[i] : y[i];
    }
  }
  std::string implementation() const override { return "nan-passthrough"; }

private:
  const float* x_;
  float* y_;
  int64_t count_;
};

class SoftmaxNonFiniteRows : public Kernel {
public:
  SoftmaxNonFiniteRows(const float* x, float* y, const ir::Shape& shape, int64_t axis)
      : x_(x), y_(y) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (static_cast<int64_t>(d) < axis) outer_ *= shape[d];
      if (static_cast<int64_t>(d) > axis) inner_ *= shape[d];
    }
    length_ = shape.empty() ? 1 : shape[static_cast<size_t>(axis)];
  }
  void run(dnnl::stream&) override {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t i = 0; i < inner_; ++i) {
        const int64_t first = o * length_ * inner_ + i;
        bool poisoned = false;
        for (int64_t k = 0; k < length_; ++k) {
          const float value = x_[first + k * inner_];
          poisoned |= (value != value) | (value == kInf);
        }
        if (!poisoned) continue;
        for (int64_t k = 0; k < length_; ++k) {
          y_[first + k * inner_] = std::numeric_limits<float>::quiet_NaN();
        }
      }
    }
  }
  std::string implementation() const override { return "softmax-nonfinite-rows"; }

private:
  const float* x_;
  float* y_;
  int64_t outer_ = 1, inner_ = 1, length_ = 1;
};

} // namespace

std::unique_ptr<Kernel> nanPassThrough(const float* x, float* y, int64_t count) {
  return std::make_unique<NanPassThrough>(x, y, count);
}

std::unique_ptr<Kernel> softmaxNonFiniteRows(const float* x, float* y, const ir::Shape& shape,
                                             int64_t axis) {
  return std::make_unique<SoftmaxNonFiniteRows>(x, y, shape, axis);
}

} // namespace popsim::kernels
