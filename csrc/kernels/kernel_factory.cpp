#include "kernels/kernel_factory.h"

#include "common/logging.h"
#include "kernels/dnnl_kernels.h"
#include "kernels/reference/reference_ops.h"

namespace popsim::kernels {
namespace {

class ReferenceKernel : public Kernel {
public:
  explicit ReferenceKernel(const KernelRequest& request) : node_(request.node) {
    for (const BoundTensor& input : request.inputs) inputs_.push_back(input.data);
    for (const BoundTensor& output : request.outputs) outputs_.push_back(output.data);
  }
  void run(dnnl::stream&) override { reference::evaluate(node_, inputs_, outputs_); }
  std::string implementation() const override { return "reference"; }

private:
  const ir::Node& node_;
  std::vector<const void*> inputs_;
  std::vector<void*> outputs_;
};

std::unique_ptr<Kernel> createDnnlKernel(const KernelRequest& request) {
  using ir::OpKind;
  switch (request.node.kind()) {
  case OpKind::Conv2d: return createConvolutionKernel(request);
  case OpKind::Linear:
  case OpKind::MatMul: return createMatMulKernel(request);
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Affine: return createEltwiseKernel(request);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div: return createBinaryKernel(request);
  case OpKind::Softmax:
  case OpKind::LogSoftmax: return createSoftmaxKernel(request);
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d:
  case OpKind::AdaptiveAvgPool2d: return createPoolingKernel(request);
  case OpKind::BatchNorm:
  case OpKind::LayerNorm: return createNormalizationKernel(request);
  case OpKind::Permute:
  case OpKind::Slice:
  case OpKind::Concat: return createLayoutKernel(request);
  case OpKind::ReduceSum:
  case OpKind::ReduceMean: return createReductionKernel(request);
  case OpKind::Reshape:
  case OpKind::Embedding: return nullptr;
  }
  return nullptr;
}

} // namespace

std::unique_ptr<Kernel> createKernel(const KernelRequest& request) {
  if (request.node.kind() == ir::OpKind::Reshape) {
    return nullptr;
  }
  std::unique_ptr<Kernel> kernel;
  try {
    kernel = createDnnlKernel(request);
  } catch (const dnnl::error& error) {
    POPSIM_LOG(Info) << request.node.describe() << ": oneDNN has no primitive for this case ("
                     << error.what() << "); using the reference kernel.";
  }
  if (kernel == nullptr) {
    kernel = std::make_unique<ReferenceKernel>(request);
  }
  POPSIM_LOG(Debug) << request.node.describe() << " -> " << kernel->implementation();
  return kernel;
}

} // namespace popsim::kernels
