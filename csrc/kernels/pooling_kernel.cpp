#include "ir/ops/pooling_geometry.h"
#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

#include "common/check.h"

#include <optional>

namespace popsim::kernels {
namespace {

struct Window {
  memory::dims kernel, stride, dilation, padLeft, padRight;
};

std::unique_ptr<Kernel> makePooling(const KernelRequest& request, dnnl::algorithm kind,
                                    const Window& window) {
  const memory::desc src = plainDesc(request.inputs[0].type.shape);
  const memory::desc dst = plainDesc(request.outputs[0].type.shape);
  const dnnl::pooling_v2_forward::primitive_desc pd(
      dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, kind, src, dst,
                                     window.stride, window.kernel, window.dilation, window.padLeft,
                                     window.padRight),
      request.engine);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(src, request.engine, request.inputs[0].data)},
      {DNNL_ARG_DST, memory(dst, request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::pooling_v2_forward(pd), std::move(args), pd);
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

bool windowsOverlap(const ir::Attributes& attrs) {
  const auto& kernel = attrs.getInts("kernel");
  const auto& stride = attrs.getInts("stride");
  const auto& dilation = attrs.getInts("dilation");
  for (size_t i = 0; i < 2; ++i) {
    if (stride[i] < dilation[i] * (kernel[i] - 1) + 1) return true;
  }
  return false;
}

// Training max pooling records each window's maximum in oneDNN's workspace,
// which only oneDNN's backward pass reads. max_pool2d_train and
// max_pool2d_grad therefore both use oneDNN or both the reference kernels
// (which record PyTorch's indices): both build this descriptor from the same
// geometry, and use oneDNN exactly when it exists, its workspace fits the
// i32-per-output indices tensor, and windows do not overlap. (Where they
// overlap, oneDNN adds a position's gradients in another order than PyTorch;
// the reference kernels add them in PyTorch's, bit for bit.)
std::optional<dnnl::pooling_v2_forward::primitive_desc>
maxPoolTrainingDesc(const ir::Attributes& attrs, const ir::Shape& in, const ir::Shape& out,
                    const dnnl::engine& engine) {
  if (windowsOverlap(attrs)) {
    return std::nullopt;
  }
  const Window window = windowOf(attrs, in, out, attrs.getInts("dilation"));
  try {
    dnnl::pooling_v2_forward::primitive_desc pd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::pooling_max, plainDesc(in), plainDesc(out),
                                       window.stride, window.kernel, window.dilation,
                                       window.padLeft, window.padRight),
        engine);
    const size_t indicesBytes = static_cast<size_t>(ir::elementCount(out)) * sizeof(int32_t);
    if (pd.workspace_desc().get_size() > indicesBytes) {
      return std::nullopt;
    }
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

std::unique_ptr<Kernel> makeMaxPoolTrain(const KernelRequest& request) {
  const ir::Shape& in = request.inputs[0].type.shape;
  const ir::Shape& out = request.outputs[0].type.shape;
  const auto pd = maxPoolTrainingDesc(request.node.attrs(), in, out, request.engine);
  if (!pd) {
    return nullptr;
  }
  try {
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(plainDesc(in), request.engine, request.inputs[0].data)},
        {DNNL_ARG_DST, memory(plainDesc(out), request.engine, request.outputs[0].data)},
        {DNNL_ARG_WORKSPACE,
         memory(pd->workspace_desc(), request.engine, request.outputs[1].data)}};
    return std::make_unique<PrimitiveKernel>(dnnl::pooling_v2_forward(*pd), std::move(args), *pd);
  } catch (const dnnl::error& error) {
    // Not a case for the reference kernel: the gradient will read a workspace.
    throwError(ErrorKind::Internal, strCat(request.node.describe(),
                                           ": oneDNN max pooling failed after its descriptor was "
                                           "created (",
                                           error.what(), ")."));
  }
}

std::unique_ptr<Kernel> makeMaxPoolGrad(const KernelRequest& request) {
  const ir::Attributes& attrs = request.node.attrs();
  const ir::Shape& in = request.outputs[0].type.shape;
  const ir::Shape& out = request.inputs[0].type.shape;
  const auto hint = maxPoolTrainingDesc(attrs, in, out, request.engine);
  if (!hint) {
    return nullptr; // the forward pass used the reference kernel too
  }
  const Window window = windowOf(attrs, in, out, attrs.getInts("dilation"));
  std::optional<dnnl::pooling_v2_backward::primitive_desc> pd;
  try {
    pd.emplace(dnnl::pooling_v2_backward::desc(dnnl::algorithm::pooling_max, plainDesc(in),
                                               plainDesc(out), window.stride, window.kernel,
                                               window.dilation, window.padLeft, window.padRight),
               request.engine, *hint);
  } catch (const dnnl::error& error) {
    throwError(ErrorKind::Internal,
               strCat(request.node.describe(), ": oneDNN has forward but no backward max pooling (",
                      error.what(), "); the reference kernel cannot read its workspace."));
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_DIFF_DST, memory(plainDesc(out), request.engine, request.inputs[0].data)},
      {DNNL_ARG_WORKSPACE, memory(hint->workspace_desc(), request.engine, request.inputs[1].data)},
      {DNNL_ARG_DIFF_SRC, memory(plainDesc(in), request.engine, request.outputs[0].data)}};
  return std::make_unique<PrimitiveKernel>(dnnl::pooling_v2_backward(*pd), std::move(args), *pd);
}

} // namespace

// max_pool2d (with its training form and gradient), avg_pool2d and
// adaptive_avg_pool2d as oneDNN pooling when the
// divisor oneDNN uses is torch's: avg pooling with divisor_override, or
// counting padding with extra ceil-mode padding, and adaptive pooling with
// uneven bins use the reference kernel.
std::unique_ptr<Kernel> createPoolingKernel(const KernelRequest& request) {
  const ir::Node& node = request.node;
  switch (node.kind()) {
  case ir::OpKind::MaxPool2d:
    return makePooling(request, dnnl::algorithm::pooling_max,
                       windowOf(request, node.attrs().getInts("dilation")));
  case ir::OpKind::MaxPool2dTrain: return makeMaxPoolTrain(request);
  case ir::OpKind::MaxPool2dGrad: return makeMaxPoolGrad(request);
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
    return makePooling(request, dnnl::algorithm::pooling_avg_exclude_padding,
                       {kernel, kernel, {0, 0}, {0, 0}, {0, 0}});
  }
  default: return nullptr;
  }
}

} // namespace popsim::kernels
