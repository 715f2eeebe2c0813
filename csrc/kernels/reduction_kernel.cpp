#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {

namespace {

// The most values per output oneDNN sums (in float, as accurately as ATen's
// cascade sum up to about this many); longer sums go to popsim's own loop,
// which accumulates in double.
constexpr int64_t kMaxFloatSummed = 64;

} // namespace

// reduce_sum / reduce_mean as a oneDNN reduction into the kept-dims shape
// (which has the same bytes as the keepdim=false result).
std::unique_ptr<Kernel> createReductionKernel(const KernelRequest& request) {
  if (!ir::isFloat(request.inputs[0].type.dtype)) {
    return nullptr; // integer sums: popsim's own exact loop
  }
  const ir::Shape& in = request.inputs[0].type.shape;
  ir::Shape kept = in;
  int64_t summed = 1;
  for (int64_t dim : request.node.attrs().getInts("dims")) {
    summed *= in[dim];
    kept[dim] = 1;
  }
  if (summed > kMaxFloatSummed) {
    return nullptr;
  }
  const memory::desc src = plainDesc(in);
  const memory::desc dst = plainDesc(kept);
  const dnnl::algorithm kind = request.node.kind() == ir::OpKind::ReduceMean
                                   ? dnnl::algorithm::reduction_mean
                                   : dnnl::algorithm::reduction_sum;
  const dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(kind, src, dst, 0.0f, 0.0f),
                                           primitiveAttributes(), request.engine);
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
    return nullptr; // oneDNN's reference loop is slower than popsim's own
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(src, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(dst, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::reduction(pd), std::move(args), pd);
}

} // namespace popsim::kernels
