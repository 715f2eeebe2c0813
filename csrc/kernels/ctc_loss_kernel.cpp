#include "kernels/ctc_loss_kernel.h"

#include "kernels/cpu_isa.h"
#include "kernels/reference/ctc_loss.h"
#include "kernels/vector/elementwise_loops.h"

#include <optional>
#include <string>
#include <vector>

namespace popsim::kernels {
namespace {

// The alpha and beta recursions are sequential over frames but not over the
// 2L + 1 positions of a frame, and the gradient's terms are independent per
// class: those run on vectors (libm's one at a time without AVX2).
class CtcLossKernel final : public Kernel {
public:
  explicit CtcLossKernel(const KernelRequest& request)
      : node_(request.node), loops_(vector::elementwiseLoops(vectorIsa())) {
    for (const BoundTensor& input : request.inputs)
      inputs_.push_back(input.data);
    for (const BoundTensor& output : request.outputs)
      outputs_.push_back(output.data);
  }

  void run(dnnl::stream&) override {
    const reference::CtcMaths maths =
        loops_ ? reference::CtcMaths{loops_->ctcLogSumExpRows, loops_->ctcGradients}
               : reference::scalarCtcMaths();
    reference::ctcWith(node_, inputs_, outputs_, maths, true);
  }

  std::string implementation() const override {
    return loops_ ? std::string("vectorised:ctc_loss_") + loops_->isa : "popsim:ctc_loss";
  }

private:
  const ir::Node& node_;
  std::vector<void*> inputs_;
  std::vector<void*> outputs_;
  std::optional<vector::ElementwiseLoops> loops_; // none: libm, one element at a time
};

} // namespace

std::unique_ptr<Kernel> createCtcLossKernel(const KernelRequest& request) {
  return std::make_unique<CtcLossKernel>(request);
}

} // namespace popsim::kernels
