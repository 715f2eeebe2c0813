#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {

// conv2d as a oneDNN convolution on plain NCHW / (G)OIHW tensors. Grouped
// weights [OC, IC/G, KH, KW] are the same bytes as oneDNN's [G, OC/G, IC/G, KH, KW].
std::unique_ptr<Kernel> createConvolutionKernel(const KernelRequest& request) {
  const ir::Node& node = request.node;
  const auto& stride = node.attrs().getInts("stride");
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  const int64_t groups = node.attrs().getInt("groups");
  const ir::Shape& ws = request.inputs[1].type.shape;
  const memory::desc src = plainDesc(request.inputs[0].type.shape);
  const memory::desc dst = plainDesc(request.outputs[0].type.shape);
  const memory::desc weights =
      groups == 1 ? plainDesc(ws) : plainDesc({groups, ws[0] / groups, ws[1], ws[2], ws[3]});
  const bool hasBias = request.inputs.size() == 3;
  const memory::desc bias = hasBias ? plainDesc(request.inputs[2].type.shape) : memory::desc();
  const memory::dims strides = {stride[0], stride[1]};
  const memory::dims dilates = {dilation[0] - 1, dilation[1] - 1}; // oneDNN counts extra gaps
  const memory::dims pad = {padding[0], padding[1]};
  using dnnl::convolution_forward;
  const convolution_forward::desc desc =
      hasBias ? convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, src, weights, bias,
                                          dst, strides, dilates, pad, pad)
              : convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, src, weights, dst,
                                          strides, dilates, pad, pad);
  const convolution_forward::primitive_desc pd(desc, request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(src, request.engine, request.inputs[0].data)},
      {DNNL_ARG_WEIGHTS, memory(weights, request.engine, request.inputs[1].data)},
      {DNNL_ARG_DST, memory(dst, request.engine, request.outputs[0].data)}};
  if (hasBias) {
    args[DNNL_ARG_BIAS] = memory(bias, request.engine, request.inputs[2].data);
  }
  return std::make_unique<PrimitiveKernel>(convolution_forward(pd), std::move(args), pd);
}

} // namespace popsim::kernels
