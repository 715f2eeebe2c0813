#pragma once

#include "kernels/kernel.h"
#include "kernels/kernel_factory.h"

#include <memory>
#include <vector>

namespace popsim::kernels {

// Precision.enableFloatingPointExceptions, as an IPU traps them: after
// `inner` runs, a float result that is infinite or NaN when none of the
// node's float operands was (overflow, division by zero) or a NaN from
// operands without one (an invalid operation, such as inf - inf) is an
// Execution error; the runtime adds the op and its source line. An ordered
// comparison (<, <=, >, >=) with a NaN operand is invalid too, as IEEE 754
// signals it (its result is a bool, so only the operands tell).
class FloatingPointCheckKernel : public Kernel {
public:
  FloatingPointCheckKernel(std::unique_ptr<Kernel> inner, std::vector<BoundTensor> operands,
                           std::vector<BoundTensor> results, bool orderedComparison);
  void run(dnnl::stream& stream) override;
  std::string implementation() const override { return inner_->implementation(); }

private:
  std::unique_ptr<Kernel> inner_;
  std::vector<BoundTensor> operands_;
  std::vector<BoundTensor> results_;
  bool orderedComparison_;
};

// The kernel checked as above when the request asks for it.
std::unique_ptr<Kernel> checkingFloatingPoint(std::unique_ptr<Kernel> kernel,
                                              const KernelRequest& request);

} // namespace popsim::kernels
