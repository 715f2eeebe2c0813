#include "kernels/binary_pointwise_kernel.h"

#include "kernels/reference/binary_pointwise.h"
#include "kernels/vector/elementwise_loops.h"

#include <omp.h>

#include <optional>
#include <string>

namespace popsim::kernels {
namespace {

// The float loops of this CPU's instruction set, if it has them.
reference::FloatPieceLoops vectorLoops(std::optional<vector::ElementwiseLoops> loops) {
  if (!loops) return {};
  return {loops->binaryValues, loops->binaryGradients};
}

// The pieces of the broadcast output spread over the IPU's OpenMP threads;
// float functions with a formula run it on vectors of doubles.
class BinaryPointwiseKernel final : public Kernel {
public:
  explicit BinaryPointwiseKernel(const KernelRequest& request)
      : loops_(vector::elementwiseLoops(vectorIsa())), op_(request.node, vectorLoops(loops_)) {
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

  std::string implementation() const override {
    return op_.vectorised() ? std::string("vectorised:binary_pointwise_") + loops_->isa
                            : "popsim:binary_pointwise";
  }

private:
  std::optional<vector::ElementwiseLoops> loops_;
  reference::BroadcastElementwise op_;
  std::vector<const void*> inputs_;
  void* output_ = nullptr;
};

} // namespace

std::unique_ptr<Kernel> createBinaryPointwiseKernel(const KernelRequest& request) {
  return std::make_unique<BinaryPointwiseKernel>(request);
}

} // namespace popsim::kernels
