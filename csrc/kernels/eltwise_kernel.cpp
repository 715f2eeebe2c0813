#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"
#include "kernels/logistic_kernel.h"
#include "kernels/pointwise_kernel.h"

namespace popsim::kernels {

// Unary elementwise ops as oneDNN eltwise over the flattened tensor.
// affine(scale, shift) is eltwise_linear: scale * x + shift.
std::unique_ptr<Kernel> createEltwiseKernel(const KernelRequest& request) {
  const ir::Node& node = request.node;
  using dnnl::algorithm;
  algorithm kind = algorithm::eltwise_relu;
  float alpha = 0.0f;
  float beta = 0.0f;
  switch (node.kind()) {
  case ir::OpKind::Relu: kind = algorithm::eltwise_relu; break;
  case ir::OpKind::Gelu:
    kind = node.attrs().getString("approximate") == "tanh" ? algorithm::eltwise_gelu_tanh
                                                           : algorithm::eltwise_gelu_erf;
    break;
  case ir::OpKind::Sigmoid: return createLogisticKernel(request, false); // ATen's accuracy
  case ir::OpKind::Tanh: kind = algorithm::eltwise_tanh; break;
  case ir::OpKind::Exp: kind = algorithm::eltwise_exp; break;
  case ir::OpKind::Log:
    // oneDNN's vectorised log is off by up to ~3e-6 near x = 1, where log(x)
    // is near 0: far from PyTorch's result in relative terms, so popsim's
    // formula runs it, in double precision.
    return createFormulaKernel(request, "log");
  case ir::OpKind::Sqrt: kind = algorithm::eltwise_sqrt; break;
  case ir::OpKind::Abs: kind = algorithm::eltwise_abs; break;
  case ir::OpKind::Affine:
    if (!ir::isFloat(request.outputs[0].type.dtype)) {
      return nullptr; // integer counters: reference kernel
    }

    kind = algorithm::eltwise_linear;
    alpha = static_cast<float>(node.attrs().getFloat("scale"));
    // No shift is a beta of -0.0, the sum's identity: a product keeps the sign
    // of a zero (-2 * 0.0 is -0.0), where adding 0.0 would make it 0.0.
    beta = node.attrs().getFloat("shift") == 0.0
               ? -0.0f
               : static_cast<float>(node.attrs().getFloat("shift"));
    break;
  default: return nullptr;
  }
  // oneDNN's relu (a max) and exp (which clamps its argument) turn NaN into
  // numbers; PyTorch returns the NaN.
  const bool passNan = kind == algorithm::eltwise_relu || kind == algorithm::eltwise_exp;
  return eltwiseKernel(request, kind, alpha, beta, passNan);
}

} // namespace popsim::kernels
