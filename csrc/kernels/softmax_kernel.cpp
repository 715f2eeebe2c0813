#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {

// softmax along `dim` with oneDNN's numerically safe algorithm. log_softmax
// uses the reference kernel: oneDNN's log is off by up to ~3e-6 near 1, which
// shows in log-probabilities close to 0, while the reference takes one exact
// log per row as PyTorch does.
std::unique_ptr<Kernel> createSoftmaxKernel(const KernelRequest& request) {
  if (request.node.kind() != ir::OpKind::Softmax) {
    return nullptr; // log_softmax and gradients: reference kernels
  }
  const memory::desc md = plainDesc(request.outputs[0].type.shape);
  const int axis = static_cast<int>(request.node.attrs().getInt("dim"));
  const dnnl::softmax_v2_forward::primitive_desc pd(
      dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::softmax_accurate, md, md, axis),
      request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(md, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(md, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::softmax_v2_forward(pd), std::move(args), pd);
}

} // namespace popsim::kernels
