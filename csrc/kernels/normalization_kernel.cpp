#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

namespace popsim::kernels {
namespace {

// Inference batch norm: oneDNN with the running statistics as global stats.
std::unique_ptr<Kernel> createBatchNorm(const KernelRequest& request) {
  const memory::desc data = plainDesc(request.inputs[0].type.shape);
  const memory::desc channel = plainDesc(request.inputs[1].type.shape);
  const float eps = static_cast<float>(request.node.attrs().getFloat("eps"));
  using dnnl::normalization_flags;
  const dnnl::batch_normalization_forward::primitive_desc pd(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, data, eps,
                                              normalization_flags::use_global_stats |
                                                  normalization_flags::use_scale |
                                                  normalization_flags::use_shift),
      primitiveAttributes(), request.engine);
  const dnnl::engine& engine = request.engine;
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(data, engine, request.inputs[0].data)},
      {DNNL_ARG_MEAN, memory(channel, engine, request.inputs[1].data)},
      {DNNL_ARG_VARIANCE, memory(channel, engine, request.inputs[2].data)},
      {DNNL_ARG_SCALE, memory(channel, engine, request.inputs[3].data)},
      {DNNL_ARG_SHIFT, memory(channel, engine, request.inputs[4].data)},
      {DNNL_ARG_DST, memory(data, engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::batch_normalization_forward(pd), std::move(args),
                                           pd);
}

// Layer norm over the trailing dimensions: the input seen as [rows, width].
// oneDNN writes per-row mean and variance, which inference does not need, so
// they go to kernel-private scratch memory.
std::unique_ptr<Kernel> createLayerNorm(const KernelRequest& request) {
  const int64_t width = request.inputs[1].type.numel();
  const int64_t rows = request.inputs[0].type.numel() / width;
  const memory::desc data({rows, width}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc stats({rows}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc channel({width}, memory::data_type::f32, memory::format_tag::a);
  const float eps = static_cast<float>(request.node.attrs().getFloat("eps"));
  using dnnl::normalization_flags;
  const dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, data, stats, eps,
                                              normalization_flags::use_scale |
                                                  normalization_flags::use_shift),
      primitiveAttributes(), request.engine);
  auto mean = std::make_unique<ScratchBuffer>(stats.get_size());
  auto variance = std::make_unique<ScratchBuffer>(stats.get_size());
  const dnnl::engine& engine = request.engine;
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(data, engine, request.inputs[0].data)},
      {DNNL_ARG_SCALE, memory(channel, engine, request.inputs[1].data)},
      {DNNL_ARG_SHIFT, memory(channel, engine, request.inputs[2].data)},
      {DNNL_ARG_MEAN, memory(stats, engine, mean->data())},
      {DNNL_ARG_VARIANCE, memory(stats, engine, variance->data())},
      {DNNL_ARG_DST, memory(data, engine, request.outputs[0].data)}};
  auto kernel =
      std::make_unique<PrimitiveKernel>(dnnl::layer_normalization_forward(pd), std::move(args), pd);
  kernel->keepAlive(std::move(mean));
  kernel->keepAlive(std::move(variance));
  return kernel;
}

} // namespace

std::unique_ptr<Kernel> createNormalizationKernel(const KernelRequest& request) {
  switch (request.node.kind()) {
  case ir::OpKind::BatchNorm: return createBatchNorm(request);
  case ir::OpKind::LayerNorm: return createLayerNorm(request);
  default: return nullptr; // training forms and gradients: reference kernels
  }
}

} // namespace popsim::kernels
