#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"

#include <limits>
#include <optional>

namespace popsim::kernels {
namespace {

// An operand the convolution reads or writes in oneDNN's preferred layout:
// the device tensor (plain, row-major) and, when the layouts differ, a
// kernel-private copy in the preferred layout with the reorder between them.
struct Operand {
  memory device;
  memory preferred;
  std::optional<dnnl::reorder> reorder;

  Operand(const memory::desc& plain, const memory::desc& wanted, void* data,
          const dnnl::engine& engine, bool toDevice,
          std::vector<std::unique_ptr<ScratchBuffer>>& owned)
      : device(plain, engine, data), preferred(device) {
    if (wanted != plain) {
      owned.push_back(std::make_unique<ScratchBuffer>(wanted.get_size()));
      preferred = memory(wanted, engine, owned.back()->data());
      reorder = toDevice ? dnnl::reorder(preferred, device) : dnnl::reorder(device, preferred);
    }
  }

  void toPreferred(dnnl::stream& stream) {
    if (reorder) reorder->execute(stream, device, preferred);
  }
  void toDevice(dnnl::stream& stream) {
    if (reorder) reorder->execute(stream, preferred, device);
  }
};

// conv2d as a oneDNN convolution in the layouts oneDNN prefers (blocked
// channels for its fastest jit kernels), as PyTorch's own CPU convolution
// does: the input is reordered in and the output out around each call, and
// weights are reordered only when they change.
class ConvolutionKernel : public Kernel {
public:
  explicit ConvolutionKernel(const KernelRequest& request) {
    const ir::Node& node = request.node;
    const auto& stride = node.attrs().getInts("stride");
    const auto& padding = node.attrs().getInts("padding");
    const auto& dilation = node.attrs().getInts("dilation");
    const int64_t groups = node.attrs().getInt("groups");
    const ir::Shape& ws = request.inputs[1].type.shape;
    // Grouped weights [OC, IC/G, KH, KW] are the same bytes as oneDNN's [G, OC/G, IC/G, KH, KW].
    const ir::Shape weightShape =
        groups == 1 ? ws : ir::Shape{groups, ws[0] / groups, ws[1], ws[2], ws[3]};
    const memory::desc src = plainDesc(request.inputs[0].type.shape);
    const memory::desc weights = plainDesc(weightShape);
    const memory::desc dst = plainDesc(request.outputs[0].type.shape);
    const auto any = [](const memory::desc& plain) {
      return memory::desc(plain.dims(), plain.data_type(), memory::format_tag::any);
    };
    const bool hasBias = request.inputs.size() == 3;
    const memory::desc bias = hasBias ? plainDesc(request.inputs[2].type.shape) : memory::desc();
    const memory::dims strides = {stride[0], stride[1]};
    const memory::dims dilates = {dilation[0] - 1, dilation[1] - 1}; // oneDNN counts extra gaps
    const memory::dims pad = {padding[0], padding[1]};
    using dnnl::convolution_forward;
    const auto kind = dnnl::prop_kind::forward_inference;
    const auto algorithm = dnnl::algorithm::convolution_direct;
    const convolution_forward::desc desc =
        hasBias ? convolution_forward::desc(kind, algorithm, any(src), any(weights), bias, any(dst),
                                            strides, dilates, pad, pad)
                : convolution_forward::desc(kind, algorithm, any(src), any(weights), any(dst),
                                            strides, dilates, pad, pad);
    const convolution_forward::primitive_desc pd(desc, request.engine);
    implementation_ = std::string("onednn:") + pd.impl_info_str();
    convolution_ = convolution_forward(pd);

    const dnnl::engine& engine = request.engine;
    src_.emplace(src, pd.src_desc(), request.inputs[0].data, engine, false, owned_);
    weights_.emplace(weights, pd.weights_desc(), request.inputs[1].data, engine, false, owned_);
    dst_.emplace(dst, pd.dst_desc(), request.outputs[0].data, engine, true, owned_);
    args_ = {{DNNL_ARG_SRC, src_->preferred},
             {DNNL_ARG_WEIGHTS, weights_->preferred},
             {DNNL_ARG_DST, dst_->preferred}};
    if (hasBias) {
      args_[DNNL_ARG_BIAS] = memory(bias, engine, request.inputs[2].data);
    }
    // Weights and constants only change when written; anything else may
    // change every run.
    const ir::ValueRole role = node.input(1)->role();
    if (role == ir::ValueRole::Weight || role == ir::ValueRole::Constant) {
      weightsVersion_ = request.weightsVersion;
    } else {
      weightsVersion_ = nullptr;
      reorderWeightsAlways_ = true;
    }
  }

  void run(dnnl::stream& stream) override {
    const uint64_t version = weightsVersion_ != nullptr ? *weightsVersion_ : 0;
    if (reorderWeightsAlways_ || version != preparedVersion_) {
      weights_->toPreferred(stream);
      preparedVersion_ = version;
    }
    src_->toPreferred(stream);
    convolution_.execute(stream, args_);
    dst_->toDevice(stream);
  }

  std::string implementation() const override { return implementation_; }

private:
  std::vector<std::unique_ptr<ScratchBuffer>> owned_;
  std::optional<Operand> src_, weights_, dst_;
  dnnl::convolution_forward convolution_;
  std::unordered_map<int, memory> args_;
  std::string implementation_;
  const uint64_t* weightsVersion_ = nullptr;
  bool reorderWeightsAlways_ = false;
  uint64_t preparedVersion_ = std::numeric_limits<uint64_t>::max();
};

} // namespace

std::unique_ptr<Kernel> createConvolutionKernel(const KernelRequest& request) {
  if (request.node.kind() != ir::OpKind::Conv2d) {
    return nullptr; // gradients: reference kernels
  }
  return std::make_unique<ConvolutionKernel>(request);
}

} // namespace popsim::kernels
