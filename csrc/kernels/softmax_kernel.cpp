#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"
#include "kernels/log_softmax_kernel.h"
#include "kernels/nonfinite_fixups.h"

namespace popsim::kernels {

// softmax along `dim` with oneDNN's numerically safe algorithm; log_softmax
// and its gradient with popsim's (log_softmax_kernel.h).
std::unique_ptr<Kernel> createSoftmaxKernel(const KernelRequest& request) {
  switch (request.node.kind()) {
  case ir::OpKind::LogSoftmax:
  case ir::OpKind::LogSoftmaxGrad: return createLogSoftmaxKernel(request);
  case ir::OpKind::Softmax: break;
  default: return nullptr; // softmax's gradient: the reference kernel
  }
  const memory::desc md = plainDesc(request.outputs[0].type.shape);
  const int axis = static_cast<int>(request.node.attrs().getInt("dim"));
  const dnnl::softmax_v2_forward::primitive_desc pd(
      dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::softmax_accurate, md, md, axis),
      primitiveAttributes(), request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(md, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(md, request.engine, request.outputs[0].data)}};
  // oneDNN's row maximum drops NaN, so rows with NaN or +Inf need PyTorch's
  // all-NaN result put back.
  std::vector<std::unique_ptr<Kernel>> parts;
  parts.push_back(
      std::make_unique<PrimitiveKernel>(dnnl::softmax_v2_forward(pd), std::move(args), pd));
  parts.push_back(softmaxNonFiniteRows(static_cast<const float*>(request.inputs[0].data),
                                       static_cast<float*>(request.outputs[0].data),
                                       request.outputs[0].type.shape, axis));
  return std::make_unique<SequenceKernel>(std::move(parts));
}

} // namespace popsim::kernels
