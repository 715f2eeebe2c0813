#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {

// softmax / log_softmax along `dim` with oneDNN's numerically safe algorithms.
std::unique_ptr<Kernel> createSoftmaxKernel(const KernelRequest& request) {
  const bool log = request.node.kind() == ir::OpKind::LogSoftmax;
  const memory::desc md = plainDesc(request.outputs[0].type.shape);
  const int axis = static_cast<int>(request.node.attrs().getInt("dim"));
  const dnnl::softmax_v2_forward::primitive_desc pd(
      dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                     log ? dnnl::algorithm::softmax_log
                                         : dnnl::algorithm::softmax_accurate,
                                     md, md, axis),
      request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(md, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(md, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::softmax_v2_forward(pd), std::move(args), pd);
}

} // namespace popsim::kernels
