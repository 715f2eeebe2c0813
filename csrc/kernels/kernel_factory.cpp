#include "kernels/kernel_factory.h"

#include "common/logging.h"
#include "ir/op_schema.h"
#include "ir/partials.h"
#include "kernels/binary_pointwise_kernel.h"
#include "kernels/ctc_loss_kernel.h"
#include "kernels/dnnl_kernels.h"
#include "kernels/floating_point_checks.h"
#include "kernels/half_optimizer_kernel.h"
#include "kernels/half_rounding.h"
#include "kernels/pointwise_kernel.h"
#include "kernels/reference/families.h"
#include "kernels/reference/reference_ops.h"
#include "kernels/replica_kernels.h"

#include <algorithm>

namespace popsim::kernels {
namespace {

// The reference loops of a node (`evaluate`, or another entry point).
class ReferenceKernel : public Kernel {
public:
  using Entry = void (*)(const ir::Node&, const std::vector<void*>&, const std::vector<void*>&);

  explicit ReferenceKernel(const KernelRequest& request, Entry entry = reference::evaluate,
                           std::string name = "reference")
      : node_(request.node), entry_(entry), name_(std::move(name)) {
    for (const BoundTensor& input : request.inputs)
      inputs_.push_back(input.data);
    for (const BoundTensor& output : request.outputs)
      outputs_.push_back(output.data);
  }
  void run(dnnl::stream&) override { entry_(node_, inputs_, outputs_); }
  std::string implementation() const override { return name_; }

private:
  const ir::Node& node_;
  Entry entry_;
  std::string name_;
  std::vector<void*> inputs_;
  std::vector<void*> outputs_;
};

// Precision.setPartialsType(torch.half), or MultiConv's partialsTypes for a
// convolution: float16 matmuls and convolutions sum their products in float16
// partials, which only the reference loops do.
std::unique_ptr<Kernel> createHalfPartialsKernel(const KernelRequest& request) {
  const ir::OpFamily family = ir::opFamily(request.node.kind());
  if (family != ir::OpFamily::Convolution && family != ir::OpFamily::MatMul) return nullptr;
  if (!ir::sumsInHalfPartials(request.node, request.halfPartials)) return nullptr;
  return std::make_unique<ReferenceKernel>(request,
                                           family == ir::OpFamily::Convolution
                                               ? reference::convolutionWithHalfPartials
                                               : reference::matmulWithHalfPartials,
                                           "reference (float16 partials)");
}

std::unique_ptr<Kernel> createDnnlKernel(const KernelRequest& request) {
  switch (ir::opFamily(request.node.kind())) {
  case ir::OpFamily::Convolution: return createConvolutionKernel(request);
  case ir::OpFamily::MatMul: return createMatMulKernel(request);
  case ir::OpFamily::Unary: return createEltwiseKernel(request);
  case ir::OpFamily::Binary: return createBinaryKernel(request);
  case ir::OpFamily::Softmax: return createSoftmaxKernel(request);
  case ir::OpFamily::Pooling: return createPoolingKernel(request);
  case ir::OpFamily::Normalization: return createNormalizationKernel(request);
  case ir::OpFamily::Layout: return createLayoutKernel(request);
  case ir::OpFamily::Reduction: return createReductionKernel(request);
  case ir::OpFamily::Pointwise: return createPointwiseKernel(request);
  case ir::OpFamily::BinaryFunction:
  case ir::OpFamily::Where: return createBinaryPointwiseKernel(request);
  case ir::OpFamily::ElementwiseGrad: return createActivationGradKernel(request);
  case ir::OpFamily::Loss: // nll_loss: plain C++ loops (reference)
    return request.node.kind() == ir::OpKind::CtcLoss ||
                   request.node.kind() == ir::OpKind::CtcLossGrad
               ? createCtcLossKernel(request)
               : nullptr;
  case ir::OpFamily::Extremum: // plain C++ loops (reference)
  case ir::OpFamily::Scan:
  case ir::OpFamily::Product:
  case ir::OpFamily::Check:
  case ir::OpFamily::Indexing:
  case ir::OpFamily::Sort:
  case ir::OpFamily::Embedding: // gathers and scatter-adds
  case ir::OpFamily::Random:
  case ir::OpFamily::Update:
  case ir::OpFamily::Optimizer: return nullptr; // plain C++ kernels
  case ir::OpFamily::Transfer:
  case ir::OpFamily::Host: return nullptr; // the host's function (host_callbacks.h)
  case ir::OpFamily::Collective: return createReplicaKernel(request);
  case ir::OpFamily::CustomGradient: return nullptr; // removed before programs run
  }
  return nullptr;
}

} // namespace

std::unique_ptr<Kernel> createKernel(const KernelRequest& request) {
  // Reshapes and stop_gradient are views; inter-IPU copies are carried out
  // by the runtime, which moves the bytes between the IPUs' threads.
  if (ir::isViewOp(request.node.kind()) || request.node.kind() == ir::OpKind::IpuCopy) {
    return nullptr;
  }
  // A float16 optimizer step rounds its weights and state as it writes them.
  if (std::unique_ptr<Kernel> step = createHalfOptimizerKernel(request)) {
    return checkingFloatingPoint(std::move(step), request);
  }
  std::unique_ptr<Kernel> kernel = createHalfPartialsKernel(request);
  // Results that are float16 values already, which rounding them again, to nearest or
  // stochastically, would leave bit for bit, at the cost of a pass over each output (and,
  // stochastically, a hash per element): the float16-partials kernels end every sum rounded
  // to float16 (and round again after a bias), and an op that selects its float16 inputs'
  // values (ReLU, max pooling and its gradient, slices...; integer inputs are indices) makes
  // no new ones.
  const bool resultsAreHalfValues =
      kernel != nullptr ||
      (ir::selectsInputValues(request.node) &&
       std::all_of(request.inputs.begin(), request.inputs.end(), [](const BoundTensor& input) {
         return input.type.dtype == ir::DType::Float16 || !ir::isFloat(input.type.dtype);
       }));
  // oneDNN cannot describe tensors without elements (it divides by their
  // sizes): an op on an empty slice (x[:, :0].sum(1), a product over K = 0)
  // runs its reference loops, which handle them as eager PyTorch does.
  const auto empty = [](const BoundTensor& t) { return t.type.numel() == 0; };
  const bool emptyTensor = std::any_of(request.inputs.begin(), request.inputs.end(), empty) ||
                           std::any_of(request.outputs.begin(), request.outputs.end(), empty);
  const bool computes = ir::opFamily(request.node.kind()) != ir::OpFamily::Collective;
  try {
    if (kernel == nullptr && !(emptyTensor && computes)) kernel = createDnnlKernel(request);
  } catch (const dnnl::error& error) {
    POPSIM_LOG(Info) << request.node.describe() << ": oneDNN has no primitive for this case ("
                     << error.what() << "); using the reference kernel.";
  }
  if (kernel == nullptr) {
    kernel = std::make_unique<ReferenceKernel>(request);
  }
  if (!resultsAreHalfValues) kernel = roundingHalfResults(std::move(kernel), request);
  kernel = checkingFloatingPoint(std::move(kernel), request);
  POPSIM_LOG(Debug) << request.node.describe() << " -> " << kernel->implementation();
  return kernel;
}

} // namespace popsim::kernels
