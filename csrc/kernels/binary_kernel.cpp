#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {

// add/sub/mul/div as oneDNN binary. oneDNN broadcasts only its second
// operand, so commutative ops swap operands when the first one broadcasts;
// other cases (a - b with `a` broadcast) use the reference kernel.
std::unique_ptr<Kernel> createBinaryKernel(const KernelRequest& request) {
  using dnnl::algorithm;
  const ir::Node& node = request.node;
  algorithm kind = algorithm::binary_add;
  bool commutative = true;
  switch (node.kind()) {
  case ir::OpKind::Add: kind = algorithm::binary_add; break;
  case ir::OpKind::Mul: kind = algorithm::binary_mul; break;
  case ir::OpKind::Sub:
    kind = algorithm::binary_sub;
    commutative = false;
    break;
  case ir::OpKind::Div:
    kind = algorithm::binary_div;
    commutative = false;
    break;
  default: return nullptr;
  }
  const ir::Shape& out = request.outputs[0].type.shape;
  const size_t rank = std::max<size_t>(out.size(), 1);
  const BoundTensor* first = &request.inputs[0];
  const BoundTensor* second = &request.inputs[1];
  if (padRank(first->type.shape, rank) != padRank(out, rank)) {
    if (!commutative || padRank(second->type.shape, rank) != padRank(out, rank)) {
      return nullptr;
    }
    std::swap(first, second);
  }
  const bool sameShape = first->type.shape == second->type.shape;
  const memory::desc dst =
      sameShape ? flatDesc(request.outputs[0].type) : plainDesc(padRank(out, rank));
  const memory::desc src0 = dst;
  const memory::desc src1 = sameShape ? dst : plainDesc(padRank(second->type.shape, rank));
  const dnnl::binary::primitive_desc pd(dnnl::binary::desc(kind, src0, src1, dst),
                                        primitiveAttributes(), request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC_0, memory(src0, request.engine, first->data)},
      {DNNL_ARG_SRC_1, memory(src1, request.engine, second->data)},
      {DNNL_ARG_DST, memory(dst, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::binary(pd), std::move(args), pd);
}

} // namespace popsim::kernels
