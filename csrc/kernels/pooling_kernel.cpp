#include "ir/ops/pooling_geometry.h"
#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"
#include "kernels/max_pool_kernel.h"

namespace popsim::kernels {
namespace {

struct Window {
  memory::dims kernel, stride, dilation, padLeft, padRight;
};

// The largest adaptive average pooling window oneDNN computes (its float sum
// is as accurate as ATen's up to 2x2; larger ones go to popsim's own loop).
constexpr int64_t kMaxFloatSummedWindow = 4;

// oneDNN pools plain (NCHW) tensors with its plain C++ implementation
// (simple_nchw) on AVX2, so the kernel pools a channel-blocked copy (jit
// kernels on every ISA) between two reorders.
std::unique_ptr<Kernel> makePooling(const KernelRequest& request, dnnl::algorithm kind,
                                    const Window& window) {
  const ir::Shape& in = request.inputs[0].type.shape;
  const ir::Shape& out = request.outputs[0].type.shape;
  const dnnl::engine& engine = request.engine;
  const int64_t block = channelBlock();
  const memory blockedIn(channelBlockedDesc(in, memory::data_type::f32, block), engine);
  const memory blockedOut(channelBlockedDesc(out, memory::data_type::f32, block), engine);
  const dnnl::pooling_v2_forward::primitive_desc pd(
      dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, kind, blockedIn.get_desc(),
                                     blockedOut.get_desc(), window.stride, window.kernel,
                                     window.dilation, window.padLeft, window.padRight),
      primitiveAttributes(), engine);
  std::vector<std::unique_ptr<Kernel>> parts;
  parts.push_back(
      reorderKernel(memory(plainDesc(in), engine, request.inputs[0].data), blockedIn, engine));
  parts.push_back(std::make_unique<PrimitiveKernel>(
      dnnl::pooling_v2_forward(pd),
      std::unordered_map<int, memory>{{DNNL_ARG_SRC, blockedIn}, {DNNL_ARG_DST, blockedOut}}, pd));
  parts.push_back(
      reorderKernel(blockedOut, memory(plainDesc(out), engine, request.outputs[0].data), engine));
  return std::make_unique<SequenceKernel>(std::move(parts));
}

// The right padding that makes oneDNN's floor division produce torch's
// output size (larger than the left padding only in ceil mode).
Window windowOf(const ir::Attributes& attrs, const ir::Shape& in, const ir::Shape& out,
                const std::vector<int64_t>& dilation) {
  const auto& kernel = attrs.getInts("kernel");
  const auto& stride = attrs.getInts("stride");
  const auto& padding = attrs.getInts("padding");
  Window window{{kernel[0], kernel[1]},
                {stride[0], stride[1]},
                {dilation[0] - 1, dilation[1] - 1},
                {padding[0], padding[1]},
                {0, 0}};
  for (size_t i = 0; i < 2; ++i) {
    const int64_t span = dilation[i] * (kernel[i] - 1) + 1;
    window.padRight[i] = (out[2 + i] - 1) * stride[i] + span - in[2 + i] - padding[i];
  }
  return window;
}

Window windowOf(const KernelRequest& request, const std::vector<int64_t>& dilation) {
  return windowOf(request.node.attrs(), request.inputs[0].type.shape, request.outputs[0].type.shape,
                  dilation);
}

} // namespace

// avg_pool2d and adaptive_avg_pool2d as oneDNN pooling when the divisor
// oneDNN uses is torch's: avg pooling with divisor_override, or counting
// padding with extra ceil-mode padding, and adaptive pooling with uneven bins
// use the reference kernel. Max pooling has its own vectorised kernel
// (max_pool_kernel.cpp); its gradient adds at PyTorch's indices in the
// reference kernel.
std::unique_ptr<Kernel> createPoolingKernel(const KernelRequest& request) {
  const ir::Node& node = request.node;
  switch (node.kind()) {
  case ir::OpKind::MaxPool2d:
  case ir::OpKind::MaxPool2dTrain: return createMaxPoolKernel(request);
  case ir::OpKind::AvgPool2d: {
    const Window window = windowOf(request, {1, 1});
    const bool includePad = node.attrs().getBool("count_include_pad");
    if (node.attrs().getInt("divisor_override") > 0 ||
        (includePad && window.padRight != window.padLeft)) {
      return nullptr;
    }
    return makePooling(request,
                       includePad ? dnnl::algorithm::pooling_avg_include_padding
                                  : dnnl::algorithm::pooling_avg_exclude_padding,
                       window);
  }
  case ir::OpKind::AdaptiveAvgPool2d: {
    const ir::Shape& in = request.inputs[0].type.shape;
    const ir::Shape& out = request.outputs[0].type.shape;
    if (in[2] % out[2] != 0 || in[3] % out[3] != 0) {
      return nullptr;
    }
    const memory::dims kernel = {in[2] / out[2], in[3] / out[3]};
    // oneDNN sums a window in float, one value after another: over a large
    // window (a squeeze-excitation's global pooling of 32x32) that is about
    // 9x less accurate than ATen's mean. popsim's own loop sums in double.
    if (kernel[0] * kernel[1] > kMaxFloatSummedWindow) {
      return nullptr;
    }
    return makePooling(request, dnnl::algorithm::pooling_avg_exclude_padding,
                       {kernel, kernel, {0, 0}, {0, 0}, {0, 0}});
  }
  default: return nullptr;
  }
}

} // namespace popsim::kernels
