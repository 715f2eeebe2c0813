#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_utils.h"
#include "kernels/single_tap_convolution.h"

#include <limits>

namespace popsim::kernels {
namespace {

// An operand a primitive reads or writes in oneDNN's preferred layout: the
// device tensor (plain, row-major) and, when the layouts differ, a
// kernel-private copy in the preferred layout with the reorder between them.
struct Operand {
  int arg;
  memory device;
  memory preferred;
  std::unique_ptr<Kernel> reorder; // reorderKernel(device, preferred) or back
  bool output;
  // Inputs that are weights or constants change only when the weights
  // version does: their reorder is skipped while it is unchanged.
  const uint64_t* version = nullptr;
  uint64_t prepared = std::numeric_limits<uint64_t>::max();

  void prepare(dnnl::stream& stream) {
    if (!reorder || output) return;
    if (version != nullptr) {
      if (*version == prepared) return;
      prepared = *version;
    }
    reorder->run(stream);
  }
  void finish(dnnl::stream& stream) {
    if (reorder && output) reorder->run(stream);
  }
};

// A convolution primitive (forward or gradient) whose operands are moved in
// and out of the layouts it prefers, as PyTorch's CPU convolutions do.
class ReorderingKernel : public Kernel {
public:
  ReorderingKernel(dnnl::primitive primitive, const dnnl::primitive_desc_base& descriptor,
                   const dnnl::engine& engine)
      : primitive_(std::move(primitive)),
        implementation_(std::string("onednn:") + descriptor.impl_info_str()) {
    bindScratchpad(descriptor, engine, args_, owned_);
  }

  void addOperand(int arg, const memory::desc& plain, const memory::desc& wanted, void* data,
                  const dnnl::engine& engine, bool output, const uint64_t* version = nullptr) {
    Operand operand{arg, memory(plain, engine, data), memory(), nullptr, output, version};
    operand.preferred = operand.device;
    if (wanted != plain) {
      owned_.push_back(std::make_unique<ScratchBuffer>(wanted.get_size()));
      operand.preferred = memory(wanted, engine, owned_.back()->data());
      operand.reorder = output ? reorderKernel(operand.preferred, operand.device, engine)
                               : reorderKernel(operand.device, operand.preferred, engine);
    }
    args_[arg] = operand.preferred;
    operands_.push_back(std::move(operand));
  }

  void addPlain(int arg, const memory::desc& desc, void* data, const dnnl::engine& engine) {
    args_[arg] = memory(desc, engine, data);
  }

  void run(dnnl::stream& stream) override {
    for (Operand& operand : operands_)
      operand.prepare(stream);
    primitive_.execute(stream, args_);
    for (Operand& operand : operands_)
      operand.finish(stream);
  }

  std::string implementation() const override { return implementation_; }

private:
  dnnl::primitive primitive_;
  std::string implementation_;
  std::vector<Operand> operands_;
  std::unordered_map<int, memory> args_;
  std::vector<std::unique_ptr<ScratchBuffer>> owned_;
};

// What all three convolution primitives share: plain descriptors of the
// activation, weight and output tensors, and the window geometry.
struct Geometry {
  memory::desc src, weights, dst, bias;
  memory::dims strides, dilates, padding;

  Geometry(const ir::Node& node, const ir::Shape& input, const ir::Shape& weight,
           const ir::Shape& output) {
    const auto& stride = node.attrs().getInts("stride");
    const auto& pad = node.attrs().getInts("padding");
    const auto& dilation = node.attrs().getInts("dilation");
    const int64_t groups = node.attrs().getInt("groups");
    // Grouped weights [OC, IC/G, *kernel] are the same bytes as oneDNN's [G, OC/G, IC/G, *kernel].
    ir::Shape grouped = weight;
    if (groups != 1) {
      grouped[0] /= groups;
      grouped.insert(grouped.begin(), groups);
    }
    src = plainDesc(input);
    weights = plainDesc(grouped);
    dst = plainDesc(output);
    bias = plainDesc({weight[0]});
    for (size_t i = 0; i < stride.size(); ++i) {
      strides.push_back(stride[i]);
      dilates.push_back(dilation[i] - 1); // oneDNN counts extra gaps
      padding.push_back(pad[i]);
    }
  }

  static memory::desc any(const memory::desc& plain) {
    return memory::desc(plain.dims(), plain.data_type(), memory::format_tag::any);
  }

  // The forward primitive descriptor gradients are built against.
  dnnl::convolution_forward::primitive_desc forward(const dnnl::engine& engine, bool withBias,
                                                    dnnl::prop_kind kind) const {
    using dnnl::convolution_forward;
    const auto algorithm = dnnl::algorithm::convolution_direct;
    const convolution_forward::desc desc =
        withBias ? convolution_forward::desc(kind, algorithm, any(src), any(weights), bias,
                                             any(dst), strides, dilates, padding, padding)
                 : convolution_forward::desc(kind, algorithm, any(src), any(weights), any(dst),
                                             strides, dilates, padding, padding);
    return convolution_forward::primitive_desc(desc, primitiveAttributes(), engine);
  }
};

std::unique_ptr<Kernel> createForward(const KernelRequest& request) {
  const Geometry g(request.node, request.inputs[0].type.shape, request.inputs[1].type.shape,
                   request.outputs[0].type.shape);
  const bool hasBias = request.inputs.size() == 3;
  const auto pd = g.forward(request.engine, hasBias,
                            request.training ? dnnl::prop_kind::forward_training
                                             : dnnl::prop_kind::forward_inference);
  auto kernel =
      std::make_unique<ReorderingKernel>(dnnl::convolution_forward(pd), pd, request.engine);
  const dnnl::engine& engine = request.engine;
  kernel->addOperand(DNNL_ARG_SRC, g.src, pd.src_desc(), request.inputs[0].data, engine, false);
  kernel->addOperand(DNNL_ARG_WEIGHTS, g.weights, pd.weights_desc(), request.inputs[1].data, engine,
                     false, weightsVersionOf(*request.node.input(1), request));
  kernel->addOperand(DNNL_ARG_DST, g.dst, pd.dst_desc(), request.outputs[0].data, engine, true);
  if (hasBias) {
    kernel->addPlain(DNNL_ARG_BIAS, g.bias, request.inputs[2].data, engine);
  }
  return kernel;
}

// convolution_grad_input(dY, W) -> dX: oneDNN's backward-data convolution.
std::unique_ptr<Kernel> createGradInput(const KernelRequest& request) {
  const Geometry g(request.node, request.outputs[0].type.shape, request.inputs[1].type.shape,
                   request.inputs[0].type.shape);
  const auto hint = g.forward(request.engine, false, dnnl::prop_kind::forward_training);
  using dnnl::convolution_backward_data;
  const convolution_backward_data::primitive_desc pd(
      convolution_backward_data::desc(dnnl::algorithm::convolution_direct, Geometry::any(g.src),
                                      Geometry::any(g.weights), Geometry::any(g.dst), g.strides,
                                      g.dilates, g.padding, g.padding),
      primitiveAttributes(), request.engine, hint);
  auto kernel =
      std::make_unique<ReorderingKernel>(convolution_backward_data(pd), pd, request.engine);
  const dnnl::engine& engine = request.engine;
  kernel->addOperand(DNNL_ARG_DIFF_DST, g.dst, pd.diff_dst_desc(), request.inputs[0].data, engine,
                     false);
  kernel->addOperand(DNNL_ARG_WEIGHTS, g.weights, pd.weights_desc(), request.inputs[1].data, engine,
                     false, weightsVersionOf(*request.node.input(1), request));
  kernel->addOperand(DNNL_ARG_DIFF_SRC, g.src, pd.diff_src_desc(), request.outputs[0].data, engine,
                     true);
  return kernel;
}

// convolution_grad_weight(X, dY) -> dW: oneDNN's backward-weights convolution.
std::unique_ptr<Kernel> createGradWeight(const KernelRequest& request) {
  const Geometry g(request.node, request.inputs[0].type.shape, request.outputs[0].type.shape,
                   request.inputs[1].type.shape);
  const auto hint = g.forward(request.engine, false, dnnl::prop_kind::forward_training);
  using dnnl::convolution_backward_weights;
  const convolution_backward_weights::primitive_desc pd(
      convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, Geometry::any(g.src),
                                         Geometry::any(g.weights), Geometry::any(g.dst), g.strides,
                                         g.dilates, g.padding, g.padding),
      primitiveAttributes(), request.engine, hint);
  auto kernel =
      std::make_unique<ReorderingKernel>(convolution_backward_weights(pd), pd, request.engine);
  const dnnl::engine& engine = request.engine;
  kernel->addOperand(DNNL_ARG_SRC, g.src, pd.src_desc(), request.inputs[0].data, engine, false);
  kernel->addOperand(DNNL_ARG_DIFF_DST, g.dst, pd.diff_dst_desc(), request.inputs[1].data, engine,
                     false);
  kernel->addOperand(DNNL_ARG_DIFF_WEIGHTS, g.weights, pd.diff_weights_desc(),
                     request.outputs[0].data, engine, true);
  return kernel;
}

} // namespace

// Convolutions (1 to 3 spatial dimensions) and their gradients as oneDNN convolutions in the
// layouts oneDNN prefers (blocked channels for its fastest jit kernels), as PyTorch's own CPU
// convolutions do: operands are reordered in and out around each call, weights only when they
// change.
std::unique_ptr<Kernel> createConvolutionKernel(const KernelRequest& request) {
  if (auto kernel = createSingleTapConvolution(request)) {
    return kernel;
  }
  switch (request.node.kind()) {
  case ir::OpKind::Convolution: return createForward(request);
  case ir::OpKind::ConvolutionGradInput: return createGradInput(request);
  case ir::OpKind::ConvolutionGradWeight: return createGradWeight(request);
  default: return nullptr;
  }
}

} // namespace popsim::kernels
