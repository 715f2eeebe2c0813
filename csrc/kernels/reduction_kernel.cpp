#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {

// reduce_sum / reduce_mean as a oneDNN reduction into the kept-dims shape
// (which has the same bytes as the keepdim=false result).
std::unique_ptr<Kernel> createReductionKernel(const KernelRequest& request) {
  if (request.inputs[0].type.dtype != ir::DType::Float32) {
    return nullptr; // integer sums: popsim's own exact loop
  }
  const ir::Shape& in = request.inputs[0].type.shape;
  ir::Shape kept = in;
  for (int64_t dim : request.node.attrs().getInts("dims")) {
    kept[dim] = 1;
  }
  const memory::desc src = plainDesc(in);
  const memory::desc dst = plainDesc(kept);
  const dnnl::algorithm kind = request.node.kind() == ir::OpKind::ReduceMean
                                   ? dnnl::algorithm::reduction_mean
                                   : dnnl::algorithm::reduction_sum;
  const dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(kind, src, dst, 0.0f, 0.0f),
                                           request.engine);
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
    return nullptr; // oneDNN's reference loop is slower than popsim's own
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(src, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(dst, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::reduction(pd), std::move(args), pd);
}

} // namespace popsim::kernels
