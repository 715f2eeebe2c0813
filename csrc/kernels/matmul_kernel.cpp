#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {
namespace {

// linear: x viewed as [M, K], weight [N, K] read as a transposed [K, N]
// through strides (no copy), bias as [1, N].
std::unique_ptr<Kernel> createLinear(const KernelRequest& request) {
  const ir::Shape& ws = request.inputs[1].type.shape;
  const int64_t N = ws[0], K = ws[1];
  const int64_t M = request.inputs[0].type.numel() / K;
  const memory::desc src({M, K}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc weights({K, N}, memory::data_type::f32, memory::format_tag::ba);
  const memory::desc dst({M, N}, memory::data_type::f32, memory::format_tag::ab);
  return matmulKernel(request.engine, src, request.inputs[0].data, weights, request.inputs[1].data,
                      dst, request.outputs[0].data,
                      request.inputs.size() == 3 ? request.inputs[2].data : nullptr);
}

// matmul with batch broadcasting: operands padded to the output's rank, so
// oneDNN sees equal ranks with size-1 batch dimensions where torch broadcasts.
std::unique_ptr<Kernel> createBatchedMatMul(const KernelRequest& request) {
  const ir::Shape& out = request.outputs[0].type.shape;
  const memory::desc a = plainDesc(padRank(request.inputs[0].type.shape, out.size()));
  const memory::desc b = plainDesc(padRank(request.inputs[1].type.shape, out.size()));
  const memory::desc dst = plainDesc(out);
  return matmulKernel(request.engine, a, request.inputs[0].data, b, request.inputs[1].data, dst,
                      request.outputs[0].data);
}

// linear_grad_weight(dY, X) -> dW = dY^T X over all leading dimensions: dY
// [M, N] read as a transposed [N, M] through strides (no copy).
std::unique_ptr<Kernel> createLinearGradWeight(const KernelRequest& request) {
  const int64_t N = request.outputs[0].type.shape[0];
  const int64_t K = request.outputs[0].type.shape[1];
  const int64_t M = request.inputs[0].type.numel() / N;
  const memory::desc gradT({N, M}, memory::data_type::f32, memory::format_tag::ba);
  const memory::desc input({M, K}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc dst({N, K}, memory::data_type::f32, memory::format_tag::ab);
  return matmulKernel(request.engine, gradT, request.inputs[0].data, input, request.inputs[1].data,
                      dst, request.outputs[0].data);
}

} // namespace

std::unique_ptr<Kernel> createMatMulKernel(const KernelRequest& request) {
  switch (request.node.kind()) {
  case ir::OpKind::Linear: return createLinear(request);
  case ir::OpKind::MatMul: return createBatchedMatMul(request);
  case ir::OpKind::LinearGradWeight: return createLinearGradWeight(request);
  default: return nullptr;
  }
}

} // namespace popsim::kernels
