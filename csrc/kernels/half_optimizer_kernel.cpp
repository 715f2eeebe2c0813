#include "kernels/half_optimizer_kernel.h"

#include "kernels/half_rounding.h"
#include "kernels/reference/elementwise_optimizers.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace popsim::kernels {
namespace {

// Elements per block: Adam's four streams (weight, gradient, two moments) of
// this many floats take 64 KiB, within any x86 core's L2 cache.
constexpr int64_t kBlockElements = 4096;
// Steps over fewer elements stay on the calling thread (an OpenMP region
// costs more than a small step), as the rounding passes do.
constexpr int64_t kParallelElements = int64_t{1} << 16;

class HalfOptimizerKernel : public Kernel {
public:
  HalfOptimizerKernel(const KernelRequest& request, std::vector<BoundTensor> halfResults)
      : node_(request.node), halfResults_(std::move(halfResults)),
        stochasticKey_(request.stochasticRoundingKey),
        elements_(request.node.input(0)->type().numel()) {
    for (const BoundTensor& input : request.inputs)
      inputs_.push_back(input.data);
  }

  void run(dnnl::stream&) override {
    // As HalfRoundingKernel rounds them, each run drawing anew.
    roundings_.clear();
    for (size_t k = 0; k < halfResults_.size(); ++k)
      roundings_.push_back(HalfRounding::ofResult(stochasticKey_, k, runs_));
    ++runs_;
    const int64_t blocks = (elements_ + kBlockElements - 1) / kBlockElements;
#pragma omp parallel for schedule(static) if (elements_ >= kParallelElements)
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t begin = block * kBlockElements;
      const int64_t end = std::min(elements_, begin + kBlockElements);
      reference::optimizerStepOver(node_, inputs_, begin, end);
      for (size_t k = 0; k < halfResults_.size(); ++k) {
        roundings_[k].round(static_cast<float*>(halfResults_[k].data), begin, end);
      }
    }
  }

  std::string implementation() const override { return "reference+f16 (blockwise)"; }

private:
  const ir::Node& node_;
  std::vector<void*> inputs_;
  std::vector<BoundTensor> halfResults_;
  std::optional<uint64_t> stochasticKey_;
  int64_t elements_;
  uint64_t runs_ = 0;
  std::vector<HalfRounding> roundings_; // this run's, kept to reuse their storage
};

} // namespace

std::unique_ptr<Kernel> createHalfOptimizerKernel(const KernelRequest& request) {
  if (!reference::updatesEachElementAlone(request.node.kind())) return nullptr;
  std::vector<BoundTensor> halfResults = halfResultsOf(request);
  if (halfResults.empty()) return nullptr;
  return std::make_unique<HalfOptimizerKernel>(request, std::move(halfResults));
}

} // namespace popsim::kernels
