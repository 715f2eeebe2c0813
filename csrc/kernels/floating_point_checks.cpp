#include "kernels/floating_point_checks.h"

#include "common/check.h"
#include "ir/op_schema.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace popsim::kernels {
namespace {

struct Found {
  bool infinity = false;
  bool nan = false;
};

Found scan(const std::vector<BoundTensor>& tensors) {
  Found found;
  for (const BoundTensor& tensor : tensors) {
    const auto* values = static_cast<const float*>(tensor.data); // float16 in float32 carriers
    const int64_t count = tensor.type.numel();
    for (int64_t i = 0; i < count && !(found.infinity && found.nan); ++i) {
      found.infinity = found.infinity || std::isinf(values[i]);
      found.nan = found.nan || std::isnan(values[i]);
    }
  }
  return found;
}

bool holdsFloats(const BoundTensor& tensor) { return ir::isFloat(tensor.type.dtype); }

bool isOrderedComparison(const ir::Node& node) {
  if (node.kind() != ir::OpKind::BinaryPointwise) return false;
  const std::string& function = node.attrs().getString("function");
  return function == "lt" || function == "le" || function == "gt" || function == "ge";
}

} // namespace

FloatingPointCheckKernel::FloatingPointCheckKernel(std::unique_ptr<Kernel> inner,
                                                   std::vector<BoundTensor> operands,
                                                   std::vector<BoundTensor> results,
                                                   bool orderedComparison)
    : inner_(std::move(inner)), operands_(std::move(operands)), results_(std::move(results)),
      orderedComparison_(orderedComparison) {}

void FloatingPointCheckKernel::run(dnnl::stream& stream) {
  // Operands are scanned before the run: an update writes its inputs.
  const Found before = scan(operands_);
  POPSIM_CHECK(!(orderedComparison_ && before.nan), ErrorKind::Execution,
               "floating-point exception (Precision.enableFloatingPointExceptions): an ordered "
               "comparison (<, <=, >, >=) with a NaN operand, an invalid operation as IEEE 754 "
               "defines it. Replace the NaN first (torch.nan_to_num), or turn the option off for "
               "eager PyTorch's False.");
  inner_->run(stream);
  const Found after = scan(results_);
  const bool overflow = after.infinity && !before.infinity && !before.nan;
  const bool invalid = after.nan && !before.nan;
  if (!overflow && !invalid) return;
  const bool half = std::any_of(results_.begin(), results_.end(), [](const BoundTensor& t) {
    return t.type.dtype == ir::DType::Float16;
  });
  throwError(ErrorKind::Execution,
             strCat("floating-point exception (Precision.enableFloatingPointExceptions): the "
                    "result holds ",
                    invalid ? "NaN, from operands without NaN (an invalid operation such as "
                              "inf - inf, 0 x inf or the root of a negative number)"
                            : "infinities, from finite operands (overflow or division by zero)",
                    ".",
                    half && overflow ? " float16 overflows beyond 65504: lower the loss "
                                       "scaling, or compute this op in float32 (.float())."
                                     : ""));
}

std::unique_ptr<Kernel> checkingFloatingPoint(std::unique_ptr<Kernel> kernel,
                                              const KernelRequest& request) {
  if (!request.floatingPointExceptions) return kernel;
  std::vector<BoundTensor> operands;
  std::vector<BoundTensor> results;
  std::copy_if(request.inputs.begin(), request.inputs.end(), std::back_inserter(operands),
               holdsFloats);
  std::copy_if(request.outputs.begin(), request.outputs.end(), std::back_inserter(results),
               holdsFloats);
  for (size_t input : ir::opSchema(request.node.kind()).mutatedInputs) {
    if (input < request.inputs.size() && holdsFloats(request.inputs[input])) {
      results.push_back(request.inputs[input]);
    }
  }
  const bool ordered = isOrderedComparison(request.node) && !operands.empty();
  if (results.empty() && !ordered) return kernel;
  return std::make_unique<FloatingPointCheckKernel>(std::move(kernel), std::move(operands),
                                                    std::move(results), ordered);
}

} // namespace popsim::kernels
