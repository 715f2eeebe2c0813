#include "kernels/dnnl_utils.h"

#include "common/check.h"
#include "kernels/cpu_isa.h"
#include "kernels/nonfinite_fixups.h"

namespace popsim::kernels {

bool isDnnlDType(ir::DType dtype) {
  return dtype != ir::DType::Int64 && dtype != ir::DType::Float64;
}

memory::data_type toDnnlDType(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::Float32:
  case ir::DType::Float16: return memory::data_type::f32; // float32 carriers
  case ir::DType::Int32: return memory::data_type::s32;
  case ir::DType::Bool: return memory::data_type::u8;
  case ir::DType::Int64:
  case ir::DType::Float64: break;
  }
  POPSIM_ASSERT(false, "oneDNN has no ", ir::dtypeName(dtype), " type.");
}

memory::dims toDnnlDims(const ir::Shape& shape) {
  if (shape.empty()) {
    return {1};
  }
  return memory::dims(shape.begin(), shape.end());
}

memory::desc plainDesc(const ir::Shape& shape, ir::DType dtype) {
  const memory::dims dims = toDnnlDims(shape);
  return memory::desc(dims, toDnnlDType(dtype), ir::contiguousStrides(dims));
}

memory::desc flatDesc(const ir::TensorType& type) {
  return memory::desc({type.numel()}, toDnnlDType(type.dtype), memory::format_tag::a);
}

ir::Shape padRank(const ir::Shape& shape, size_t rank) {
  ir::Shape padded(rank - shape.size(), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

int64_t channelBlock() { return vectorIsa() == VectorIsa::Avx512 ? 16 : 8; }

memory::desc channelBlockedDesc(const ir::Shape& shape, memory::data_type type, int64_t block) {
  POPSIM_ASSERT(shape.size() == 4 && (block == 8 || block == 16),
                "channel blocks are for NCHW tensors, in 8 or 16 channels.");
  return memory::desc(toDnnlDims(shape), type,
                      block == 16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c);
}

const uint64_t* weightsVersionOf(const ir::Value& value, const KernelRequest& request) {
  const bool fixed =
      value.role() == ir::ValueRole::Weight || value.role() == ir::ValueRole::Constant;
  return fixed ? request.weightsVersion : nullptr;
}

std::unique_ptr<Kernel> matmulKernel(const dnnl::engine& engine, const memory::desc& a, void* aData,
                                     const memory::desc& b, void* bData, const memory::desc& dst,
                                     void* dstData, void* biasData) {
  const memory::desc bias = biasData ? memory::desc({1, dst.dims().back()}, memory::data_type::f32,
                                                    memory::format_tag::ab)
                                     : memory::desc();
  const dnnl::matmul::primitive_desc pd(biasData ? dnnl::matmul::desc(a, b, bias, dst)
                                                 : dnnl::matmul::desc(a, b, dst),
                                        primitiveAttributes(), engine);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(a, engine, aData)},
                                          {DNNL_ARG_WEIGHTS, memory(b, engine, bData)},
                                          {DNNL_ARG_DST, memory(dst, engine, dstData)}};
  if (biasData) {
    args[DNNL_ARG_BIAS] = memory(bias, engine, biasData);
  }
  return std::make_unique<PrimitiveKernel>(dnnl::matmul(pd), std::move(args), pd);
}

std::unique_ptr<Kernel> reorderKernel(const memory& from, const memory& to,
                                      const dnnl::engine& engine) {
  const dnnl::reorder::primitive_desc pd(engine, from.get_desc(), engine, to.get_desc(),
                                         primitiveAttributes());
  return std::make_unique<PrimitiveKernel>(
      dnnl::reorder(pd), std::unordered_map<int, memory>{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
      pd);
}

dnnl::primitive_attr primitiveAttributes() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attributes;
}

void bindScratchpad(const dnnl::primitive_desc_base& descriptor, const dnnl::engine& engine,
                    std::unordered_map<int, memory>& args,
                    std::vector<std::unique_ptr<ScratchBuffer>>& owned) {
  POPSIM_ASSERT(descriptor.get_primitive_attr().get_scratchpad_mode() ==
                    dnnl::scratchpad_mode::user,
                "oneDNN primitive ", descriptor.impl_info_str(),
                " was created without popsim's primitiveAttributes().");
  const memory::desc scratchpad = descriptor.scratchpad_desc();
  if (scratchpad.get_size() == 0) return;
  owned.push_back(std::make_unique<ScratchBuffer>(scratchpad.get_size()));
  args[DNNL_ARG_SCRATCHPAD] = memory(scratchpad, engine, owned.back()->data());
}

PrimitiveKernel::PrimitiveKernel(dnnl::primitive primitive, std::unordered_map<int, memory> args,
                                 const dnnl::primitive_desc_base& descriptor)
    : primitive_(std::move(primitive)), args_(std::move(args)),
      implementation_(std::string("onednn:") + descriptor.impl_info_str()) {
  POPSIM_ASSERT(!args_.empty(), "oneDNN primitive ", implementation_, " has no operands.");
  bindScratchpad(descriptor, args_.begin()->second.get_engine(), args_, owned_); // the operands'
}

void PrimitiveKernel::run(dnnl::stream& stream) { primitive_.execute(stream, args_); }

SequenceKernel::SequenceKernel(std::vector<std::unique_ptr<Kernel>> parts)
    : parts_(std::move(parts)) {}

void SequenceKernel::run(dnnl::stream& stream) {
  for (auto& part : parts_) {
    part->run(stream);
  }
}

std::string SequenceKernel::implementation() const {
  std::string text;
  for (const auto& part : parts_) {
    text += (text.empty() ? "" : " + ") + part->implementation();
  }
  return text;
}

std::unique_ptr<Kernel> eltwiseKernel(const KernelRequest& request, dnnl::algorithm algorithm,
                                      float alpha, float beta, bool passNan) {
  const memory::desc md = flatDesc(request.outputs[0].type);
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, algorithm, md, alpha, beta),
      primitiveAttributes(), request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(md, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(md, request.engine, request.outputs[0].data)}};
  auto primitive =
      std::make_unique<PrimitiveKernel>(dnnl::eltwise_forward(pd), std::move(args), pd);
  if (!passNan) {
    return primitive;
  }
  std::vector<std::unique_ptr<Kernel>> parts;
  parts.push_back(std::move(primitive));
  parts.push_back(nanPassThrough(static_cast<const float*>(request.inputs[0].data),
                                 static_cast<float*>(request.outputs[0].data),
                                 request.outputs[0].type.numel()));
  return std::make_unique<SequenceKernel>(std::move(parts));
}

} // namespace popsim::kernels
