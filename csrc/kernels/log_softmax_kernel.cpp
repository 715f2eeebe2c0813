#include "kernels/log_softmax_kernel.h"

#include "kernels/cpu_isa.h"
#include "kernels/reference/indexing.h"
#include "kernels/vector/elementwise_loops.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace popsim::kernels {
namespace {

// log_softmax(x) = x - max - log(sum(exp(x - max))) and its gradient
// dx = dy - exp(y) * sum(dy), computed as the reference kernel does (the
// maximum, the sums and the differences in double, one exact log per row)
// with the exps on SLEEF's vectors (vector/elementwise_loops.h) where the
// CPU has AVX2, libm's one at a time otherwise. oneDNN's log_softmax is not
// used: its log is off by up to ~3e-6 near 1, which shows in
// log-probabilities close to 0. Rows along an inner dim are gathered into
// contiguous scratch first (a tile at a time), so the vector loops read
// consecutive floats.
class LogSoftmaxKernel final : public Kernel {
public:
  explicit LogSoftmaxKernel(const KernelRequest& request)
      : gradient_(request.node.kind() == ir::OpKind::LogSoftmaxGrad),
        split_(reference::splitAroundAxis(request.node.input(0)->type().shape,
                                          request.node.attrs().getInt("dim"))),
        first_(static_cast<const float*>(request.inputs[0].data)),
        second_(gradient_ ? static_cast<const float*>(request.inputs[1].data) : nullptr),
        out_(static_cast<float*>(request.outputs[0].data)),
        loops_(vector::elementwiseLoops(vectorIsa())) {}

  void run(dnnl::stream&) override {
    const int64_t size = split_.size, inner = split_.inner;
    if (split_.outer * inner == 0 || size == 0) return;
    // A group is up to kColumns neighbouring rows of one outer index (one
    // row where inner is 1), transposed through scratch as a tile, so that
    // every read and write covers consecutive floats.
    const int64_t columnGroups = (inner + kColumns - 1) / kColumns;
    const int64_t groups = split_.outer * columnGroups;
    const int64_t rowsPerGroup = std::min(inner, kColumns);
    const int64_t groupsPerTask = std::max<int64_t>(1, 4096 / (size * rowsPerGroup));
    const int64_t tasks = (groups + groupsPerTask - 1) / groupsPerTask;
    // Each thread's tile scratch, allocated once per kernel (not per task:
    // a zeroed tile per group cost as much as the exps).
    const size_t tile = inner == 1 ? 0 : static_cast<size_t>(3 * kColumns * size);
    const auto threads = static_cast<size_t>(omp_get_max_threads());
    if (scratch_.size() < tile * threads) scratch_.resize(tile * threads);
#pragma omp parallel for schedule(static) if (tasks > 1)
    for (int64_t t = 0; t < tasks; ++t) {
      float* scratch = scratch_.data() + tile * static_cast<size_t>(omp_get_thread_num());
      for (int64_t g = t * groupsPerTask; g < std::min(groups, (t + 1) * groupsPerTask); ++g) {
        runGroup(g / columnGroups, (g % columnGroups) * kColumns, scratch);
      }
    }
  }

  std::string implementation() const override {
    return loops_ ? std::string("vectorised:log_softmax_") + loops_->isa : "popsim:log_softmax";
  }

private:
  static constexpr int64_t kColumns = 16; // one 64-byte cache line of floats

  // The rows of outer index o and inner indices first .. first + kColumns:
  // elements (o * size + k) * inner + i of every operand, k < size.
  void runGroup(int64_t o, int64_t first, float* scratch) const {
    const int64_t size = split_.size, inner = split_.inner;
    const int64_t base = o * size * inner + first;
    if (inner == 1) {
      gradient_ ? gradientRow(first_ + base, second_ + base, out_ + base)
                : valueRow(first_ + base, out_ + base);
      return;
    }
    const int64_t width = std::min(kColumns, inner - first);
    float* a = scratch;
    float* b = scratch + kColumns * size;
    float* result = scratch + 2 * kColumns * size;
    for (int64_t k = 0; k < size; ++k) {
      for (int64_t j = 0; j < width; ++j) {
        a[j * size + k] = first_[base + k * inner + j];
        if (gradient_) b[j * size + k] = second_[base + k * inner + j];
      }
    }
    for (int64_t j = 0; j < width; ++j) {
      gradient_ ? gradientRow(a + j * size, b + j * size, result + j * size)
                : valueRow(a + j * size, result + j * size);
    }
    for (int64_t k = 0; k < size; ++k) {
      for (int64_t j = 0; j < width; ++j)
        out_[base + k * inner + j] = result[j * size + k];
    }
  }

  void valueRow(const float* x, float* y) const {
    const int64_t size = split_.size;
    double maxValue = x[0];
    for (int64_t k = 1; k < size; ++k)
      maxValue = std::max(maxValue, static_cast<double>(x[k]));
    double sum = 0.0;
    if (loops_) {
      sum = loops_->sumOfExp(x, maxValue, size);
    } else {
      for (int64_t k = 0; k < size; ++k)
        sum += std::exp(x[k] - maxValue);
    }
    const double logSum = std::log(sum);
    for (int64_t k = 0; k < size; ++k)
      y[k] = static_cast<float>((x[k] - maxValue) - logSum);
  }

  void gradientRow(const float* dy, const float* y, float* dx) const {
    const int64_t size = split_.size;
    double sum = 0.0;
    for (int64_t k = 0; k < size; ++k)
      sum += dy[k];
    if (loops_) return loops_->logSoftmaxGradients(dy, y, sum, dx, size);
    for (int64_t k = 0; k < size; ++k)
      dx[k] = static_cast<float>(dy[k] - std::exp(static_cast<double>(y[k])) * sum);
  }

  bool gradient_;
  reference::AxisSplit split_;
  const float* first_;  // x, or dy for the gradient
  const float* second_; // y for the gradient
  float* out_;
  std::optional<vector::ElementwiseLoops> loops_; // none: libm, one element at a time
  std::vector<float> scratch_;                    // per thread: a tile's operands and result
};

} // namespace

std::unique_ptr<Kernel> createLogSoftmaxKernel(const KernelRequest& request) {
  return std::make_unique<LogSoftmaxKernel>(request);
}

} // namespace popsim::kernels
