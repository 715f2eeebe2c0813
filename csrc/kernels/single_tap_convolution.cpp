// Convolutions whose window sees one tap of the input, computed as matmuls.
//
// A 3x3 convolution with padding 1 on a 1x1 image (ResNet's last stage on
// small images) multiplies only the weights' centre tap with the input; the
// other eight taps meet padding. oneDNN has no jit backward-weights kernel
// for such shapes on AVX2 and falls back to an im2col gemm: 13.5 ms on one
// thread for what is a 16 x 512 by 512 x 512 product. With W[o][c] the tap's weights
// (gathered into a contiguous [O, C] copy, since oneDNN's matmul runs its
// reference kernel on other strides), and the image's 1x1 pixels as rows:
//   convolution:             Y[n][o]  = sum_c X[n][c] W[o][c] + bias[o]
//   convolution_grad_input:  dX[n][c] = sum_o dY[n][o] W[o][c]
//   convolution_grad_weight: dW = 0 except at the tap: dW[o][c] = sum_n dY[n][o] X[n][c]
// The sums are the convolution's, in another order (fp32 rounding differs
// from oneDNN's convolution kernels).
#include "kernels/single_tap_convolution.h"
#include "kernels/dnnl_utils.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace popsim::kernels {
namespace {

// Where the single tap is, if every output pixel's window holds exactly one
// in-bounds input pixel and it is the same tap for all: 1x1 input and output.
struct SingleTap {
  int64_t offset;       // kh * KW + kw: the tap within one [KH, KW] kernel
  int64_t kernelPixels; // KH * KW
};

std::optional<SingleTap> singleTap(const ir::Node& node, const ir::Shape& input,
                                   const ir::Shape& weight, const ir::Shape& output) {
  if (node.attrs().getInt("groups") != 1 || input.size() != 4 || output.size() != 4) {
    return std::nullopt;
  }
  const auto& padding = node.attrs().getInts("padding");
  const auto& dilation = node.attrs().getInts("dilation");
  int64_t tap[2] = {0, 0};
  for (size_t i = 0; i < 2; ++i) {
    if (input[2 + i] != 1 || output[2 + i] != 1 || padding[i] % dilation[i] != 0 ||
        padding[i] / dilation[i] >= weight[2 + i]) {
      return std::nullopt;
    }
    tap[i] = padding[i] / dilation[i];
  }
  return SingleTap{tap[0] * weight[3] + tap[1], weight[2] * weight[3]};
}

memory::desc rows(int64_t count, int64_t width) {
  return memory::desc({count, width}, memory::data_type::f32, memory::format_tag::ab);
}

// The tap's weights of W [O, C, KH, KW] copied into the contiguous [O, C]
// matrix this kernel owns: again whenever the weights version moves (or
// every run, for weights computed by the program).
class GatherTap : public Kernel {
public:
  GatherTap(const float* weights, int64_t filters, int64_t channels, const SingleTap& where,
            const uint64_t* version)
      : weights_(weights + where.offset), tap_(static_cast<size_t>(filters * channels)),
        stride_(where.kernelPixels), version_(version) {}
  float* tap() { return tap_.data(); }
  void run(dnnl::stream&) override {
    if (version_ != nullptr) {
      if (*version_ == prepared_) return;
      prepared_ = *version_;
    }
    for (size_t i = 0; i < tap_.size(); ++i) {
      tap_[i] = weights_[static_cast<int64_t>(i) * stride_];
    }
  }
  std::string implementation() const override { return "gather-tap"; }

private:
  const float* weights_;
  std::vector<float> tap_;
  int64_t stride_;
  const uint64_t* version_;
  uint64_t prepared_ = std::numeric_limits<uint64_t>::max();
};

// dW: zero except the tap, which takes the [O, C] matmul result held in the
// matrix this kernel owns.
class ScatterTap : public Kernel {
public:
  ScatterTap(float* weights, int64_t filters, int64_t channels, const SingleTap& where)
      : tap_(static_cast<size_t>(filters * channels)), weights_(weights), offset_(where.offset),
        stride_(where.kernelPixels) {}
  float* tap() { return tap_.data(); }
  void run(dnnl::stream&) override {
    const auto count = static_cast<int64_t>(tap_.size());
    std::fill(weights_, weights_ + count * stride_, 0.0f);
    for (int64_t i = 0; i < count; ++i) {
      weights_[i * stride_ + offset_] = tap_[static_cast<size_t>(i)];
    }
  }
  std::string implementation() const override { return "scatter-tap"; }

private:
  std::vector<float> tap_;
  float* weights_;
  int64_t offset_, stride_;
};

// The gather of the tap's weights, then the matmul that reads them as b.
std::unique_ptr<Kernel> withGatheredTap(const KernelRequest& request, int64_t O, int64_t C,
                                        const SingleTap& tap, bool transposed,
                                        const memory::desc& a, void* aData, const memory::desc& dst,
                                        void* bias) {
  auto gather = std::make_unique<GatherTap>(static_cast<const float*>(request.inputs[1].data), O, C,
                                            tap, weightsVersionOf(*request.node.input(1), request));
  const memory::desc b = transposed
                             ? memory::desc({C, O}, memory::data_type::f32, memory::format_tag::ba)
                             : rows(O, C);
  std::vector<std::unique_ptr<Kernel>> parts;
  float* weights = gather->tap();
  parts.push_back(std::move(gather));
  parts.push_back(
      matmulKernel(request.engine, a, aData, b, weights, dst, request.outputs[0].data, bias));
  return std::make_unique<SequenceKernel>(std::move(parts));
}

} // namespace

std::unique_ptr<Kernel> createSingleTapConvolution(const KernelRequest& request) {
  const ir::Node& node = request.node;
  switch (node.kind()) {
  case ir::OpKind::Convolution: {
    const ir::Shape& x = request.inputs[0].type.shape;
    const ir::Shape& w = request.inputs[1].type.shape;
    const auto tap = singleTap(node, x, w, request.outputs[0].type.shape);
    if (!tap) return nullptr;
    const int64_t N = x[0], C = x[1], O = w[0];
    return withGatheredTap(request, O, C, *tap, true, rows(N, C), request.inputs[0].data,
                           rows(N, O),
                           request.inputs.size() == 3 ? request.inputs[2].data : nullptr);
  }
  case ir::OpKind::ConvolutionGradInput: {
    const ir::Shape& dx = request.outputs[0].type.shape;
    const ir::Shape& w = request.inputs[1].type.shape;
    const auto tap = singleTap(node, dx, w, request.inputs[0].type.shape);
    if (!tap) return nullptr;
    const int64_t N = dx[0], C = dx[1], O = w[0];
    return withGatheredTap(request, O, C, *tap, false, rows(N, O), request.inputs[0].data,
                           rows(N, C), nullptr);
  }
  case ir::OpKind::ConvolutionGradWeight: {
    const ir::Shape& x = request.inputs[0].type.shape;
    const ir::Shape& dw = request.outputs[0].type.shape;
    const auto tap = singleTap(node, x, dw, request.inputs[1].type.shape);
    if (!tap) return nullptr;
    const int64_t N = x[0], C = x[1], O = dw[0];
    auto scatter =
        std::make_unique<ScatterTap>(static_cast<float*>(request.outputs[0].data), O, C, *tap);
    const memory::desc gradT({O, N}, memory::data_type::f32, memory::format_tag::ba);
    std::vector<std::unique_ptr<Kernel>> parts;
    parts.push_back(matmulKernel(request.engine, gradT, request.inputs[1].data, rows(N, C),
                                 request.inputs[0].data, rows(O, C), scatter->tap()));
    parts.push_back(std::move(scatter));
    return std::make_unique<SequenceKernel>(std::move(parts));
  }
  default: return nullptr;
  }
}

} // namespace popsim::kernels
