#pragma once

#include "common/float16.h"
#include "kernels/half_rounding.h"

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

// HalfSum for a row of outputs that receive their products together: the
// caller adds one product to each element of run(), then calls added() (or
// addScaled() does both for products of one number and a row); a
// row is vectorised where HalfSums are not, with the same results (each
// element's products summed in the same order, rounded at the same points).
class HalfSumRow {
public:
  explicit HalfSumRow(size_t count) : run_(count), total_(count), scratch_(count) {}
  void reset() {
    std::fill(run_.begin(), run_.end(), 0.0);
    std::fill(total_.begin(), total_.end(), 0.0f);
    count_ = 0;
  }
  double* run() { return run_.data(); }
  void added() {
    if (++count_ == kHalfPartialRun) flush();
  }
  // The products coefficient * values[i], one per element, then added().
  void addScaled(double coefficient, const float* values) {
    const size_t n = run_.size();
    for (size_t i = 0; i < n; ++i)
      run_[i] += coefficient * values[i];
    added();
  }
  const float* result() {
    flush();
    return total_.data();
  }

private:
  void flush() {
    if (count_ == 0) return;
    const size_t n = run_.size();
    for (size_t i = 0; i < n; ++i)
      scratch_[i] = static_cast<float>(run_[i]);
    kernels::roundToHalf(scratch_.data(), n);
    for (size_t i = 0; i < n; ++i)
      scratch_[i] = total_[i] + scratch_[i];
    kernels::roundToHalf(scratch_.data(), n);
    total_.swap(scratch_);
    std::fill(run_.begin(), run_.end(), 0.0);
    count_ = 0;
  }

  std::vector<double> run_;
  std::vector<float> total_, scratch_;
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
