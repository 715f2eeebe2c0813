#pragma once

#include "common/float16.h"

#include <algorithm>
#include <cstddef>
#include <vector>

// How the reference matmuls and convolutions sum their products.
namespace popsim::kernels::reference {

// In double, rounded to float once: PyTorch's CPU kernels' precision.
class FloatSum {
public:
  explicit FloatSum(double start = 0.0) : sum_(start) {}
  void add(double product) { sum_ += product; }
  float result() const { return static_cast<float>(sum_); }

private:
  double sum_;
};

// As an IPU with float16 partials (Precision.setPartialsType(torch.half)):
// each run of kHalfPartialRun consecutive products (in the reduction's
// order) is summed, its sum rounded to float16 (through float32) and added
// to a float16 total, which is rounded again.
constexpr int kHalfPartialRun = 16;

class HalfSum {
public:
  explicit HalfSum(double start = 0.0) : total_(popsim::roundToHalf(static_cast<float>(start))) {}
  void add(double product) {
    run_ += product;
    if (++count_ == kHalfPartialRun) flush();
  }
  float result() {
    flush();
    return total_;
  }

private:
  void flush() {
    if (count_ == 0) return;
    total_ = popsim::roundToHalf(total_ + popsim::roundToHalf(static_cast<float>(run_)));
    run_ = 0.0;
    count_ = 0;
  }

  float total_;
  double run_ = 0.0;
  int count_ = 0;
};

// One sum per output element, for products that arrive interleaved.
template <typename Sum> class Sums {
public:
  explicit Sums(size_t count) : sums_(count) {}
  void add(size_t index, double product) { sums_[index].add(product); }
  void store(float* out) {
    for (size_t i = 0; i < sums_.size(); ++i)
      out[i] = sums_[i].result();
  }

private:
  std::vector<Sum> sums_;
};

} // namespace popsim::kernels::reference
