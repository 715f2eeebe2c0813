#include "kernels/binary_pointwise_kernel.h"

#include "kernels/reference/binary_pointwise.h"

#include <omp.h>

namespace popsim::kernels {
namespace {

// The pieces of the broadcast output spread over the IPU's OpenMP threads.
class BinaryPointwiseKernel final : public Kernel {
public:
  explicit BinaryPointwiseKernel(const KernelRequest& request) : op_(request.node) {
    for (const BoundTensor& input : request.inputs)
      inputs_.push_back(input.data);
    output_ = request.outputs[0].data;
  }

  void run(dnnl::stream&) override {
    const int64_t pieces = op_.pieces();
    bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (pieces > 1)
    for (int64_t piece = 0; piece < pieces; ++piece) {
      ok = op_.run(inputs_, output_, piece, piece + 1) && ok;
    }
    if (!ok) op_.throwDivisionByZero();
  }

  std::string implementation() const override { return "popsim:binary_pointwise"; }

private:
  reference::BroadcastElementwise op_;
  std::vector<const void*> inputs_;
  void* output_ = nullptr;
};

} // namespace

std::unique_ptr<Kernel> createBinaryPointwiseKernel(const KernelRequest& request) {
  return std::make_unique<BinaryPointwiseKernel>(request);
}

} // namespace popsim::kernels
