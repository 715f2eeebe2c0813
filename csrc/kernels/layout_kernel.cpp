#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {
namespace {

// A reorder from a strided view of the input to the contiguous output.
std::unique_ptr<Kernel> makeStridedCopy(const KernelRequest& request, const memory::desc& view,
                                        void* viewData) {
  const memory::desc dst = plainDesc(request.outputs[0].type.shape, request.outputs[0].type.dtype);
  const dnnl::reorder::primitive_desc pd(request.engine, view, request.engine, dst,
                                         primitiveAttributes());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_FROM, memory(view, request.engine, viewData)},
      {DNNL_ARG_TO, memory(dst, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::reorder(pd), std::move(args), pd);
}

// permute: the input read with permuted strides.
std::unique_ptr<Kernel> createPermute(const KernelRequest& request) {
  const ir::TensorType& in = request.inputs[0].type;
  const auto& perm = request.node.attrs().getInts("perm");
  const std::vector<int64_t> inStrides = ir::contiguousStrides(in.shape);
  memory::dims strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    strides[i] = inStrides[perm[i]];
  }
  const memory::desc view(toDnnlDims(request.outputs[0].type.shape), toDnnlDType(in.dtype),
                          strides);
  return makeStridedCopy(request, view, request.inputs[0].data);
}

// slice: the input read from `start` with the step folded into the stride.
std::unique_ptr<Kernel> createSlice(const KernelRequest& request) {
  const ir::TensorType& in = request.inputs[0].type;
  const ir::Attributes& attrs = request.node.attrs();
  const int64_t dim = attrs.getInt("dim");
  std::vector<int64_t> strides = ir::contiguousStrides(in.shape);
  const int64_t offset = attrs.getInt("start") * strides[dim];
  strides[dim] *= attrs.getInt("step");
  const memory::desc view(toDnnlDims(request.outputs[0].type.shape), toDnnlDType(in.dtype),
                          strides);
  auto* base = static_cast<uint8_t*>(request.inputs[0].data);
  return makeStridedCopy(request, view,
                         base + offset * static_cast<int64_t>(ir::storageSize(in.dtype)));
}

std::unique_ptr<Kernel> createConcat(const KernelRequest& request) {
  std::vector<memory::desc> sources;
  for (const BoundTensor& input : request.inputs) {
    sources.push_back(plainDesc(input.type.shape, input.type.dtype));
  }
  const memory::desc dst = plainDesc(request.outputs[0].type.shape, request.outputs[0].type.dtype);
  const int axis = static_cast<int>(request.node.attrs().getInt("dim"));
  const dnnl::concat::primitive_desc pd(dst, axis, sources, request.engine, primitiveAttributes());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_DST, memory(dst, request.engine, request.outputs[0].data)}};
  for (size_t i = 0; i < sources.size(); ++i) {
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] =
        memory(sources[i], request.engine, request.inputs[i].data);
  }
  return std::make_unique<PrimitiveKernel>(dnnl::concat(pd), std::move(args), pd);
}

} // namespace

// permute, slice and concat as oneDNN reorders and concat (data types oneDNN
// knows; int64 tensors use the reference kernel).
std::unique_ptr<Kernel> createLayoutKernel(const KernelRequest& request) {
  if (!isDnnlDType(request.outputs[0].type.dtype)) {
    return nullptr;
  }
  switch (request.node.kind()) {
  case ir::OpKind::Permute: return createPermute(request);
  case ir::OpKind::Slice: return createSlice(request);
  case ir::OpKind::Concat: return createConcat(request);
  default: return nullptr;
  }
}

} // namespace popsim::kernels
