// Every op's kernel against the reference implementation on the same random
// data: oneDNN kernels must agree with the plain loops, and the factory must
// pick oneDNN where it can (a silent fallback would hide a slow path).

#include "common/error.h"
#include "ir/graph.h"
#include "kernels/cpu_isa.h"
#include "kernels/kernel_factory.h"
#include "kernels/reference/reference_ops.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

namespace popsim {
namespace {

using ir::Attributes;
using ir::DType;
using ir::OpKind;
using ir::TensorType;

struct KernelCase {
  std::string name;
  OpKind kind;
  std::vector<TensorType> inputs;
  Attributes attrs;
  std::string expected; // the implementation's name or its start ("onednn", "reference")
  float low = -2.0f;
  float high = 2.0f;
  // Outputs compared with the reference (all when empty); other outputs are
  // encoded differently by each implementation (max pooling indices).
  std::vector<size_t> compared = {};
};

std::ostream& operator<<(std::ostream& out, const KernelCase& c) { return out << c.name; }

TensorType f32(ir::Shape shape) { return {DType::Float32, std::move(shape)}; }

Attributes conv(std::vector<int64_t> stride, std::vector<int64_t> padding,
                std::vector<int64_t> dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

Attributes maxPool(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, std::vector<int64_t> dilation, bool ceil) {
  return {{"kernel", kernel},
          {"stride", stride},
          {"padding", padding},
          {"dilation", dilation},
          {"ceil_mode", ceil}};
}

Attributes avgPool(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, bool ceil, bool includePad, int64_t divisor) {
  return {{"kernel", kernel},
          {"stride", stride},
          {"padding", padding},
          {"ceil_mode", ceil},
          {"count_include_pad", includePad},
          {"divisor_override", divisor}};
}

Attributes withShape(Attributes attrs, const std::string& name, std::vector<int64_t> shape) {
  attrs.set(name, std::move(shape));
  return attrs;
}

Attributes pointwise(const std::string& function, std::vector<double> params) {
  return {{"function", function}, {"params", std::move(params)}};
}

// The elementwise tables' loops for this CPU (vector/elementwise_loops.h).
std::string pointwiseLoops(const std::string& withoutAvx2 = "popsim:pointwise",
                           const std::string& table = "pointwise") {
  const kernels::VectorIsa isa = kernels::vectorIsa();
  return isa == kernels::VectorIsa::Baseline
             ? withoutAvx2
             : "vectorised:" + table + "_" + kernels::vectorIsaName(isa);
}
std::string binaryLoops() { return pointwiseLoops("popsim:binary_pointwise", "binary_pointwise"); }
std::string logisticLoops() { return pointwiseLoops("popsim:logistic", "logistic"); }
std::string logSoftmaxLoops() { return pointwiseLoops("popsim:log_softmax", "log_softmax"); }

const std::vector<KernelCase>& kernelCases() {
  static const std::vector<KernelCase> cases = {
      {"pointwise_celu",
       OpKind::Pointwise,
       {f32({5, 203})},
       pointwise("celu", {0.5}),
       pointwiseLoops(),
       -6.0f,
       6.0f},
      {"pointwise_silu",
       OpKind::Pointwise,
       {f32({5, 203})},
       pointwise("silu", {}),
       logisticLoops(),
       -6.0f,
       6.0f},
      {"pointwise_grad_softplus",
       OpKind::PointwiseGrad,
       {f32({5, 203}), f32({5, 203})},
       pointwise("softplus", {2.0, 20.0}),
       pointwiseLoops(),
       -12.0f,
       12.0f},
      {"binary_remainder_broadcast",
       OpKind::BinaryPointwise,
       {f32({5, 203}), f32({203})},
       {{"function", std::string("remainder")}},
       binaryLoops(),
       -6.0f,
       6.0f},
      {"binary_grad_atan2_of_b",
       OpKind::BinaryPointwiseGrad,
       {f32({5, 203}), f32({5, 203}), f32({5, 1})},
       {{"function", std::string("atan2")}, {"operand", int64_t{1}}},
       binaryLoops()},
      {"binary_maximum_fast_float_loop",
       OpKind::BinaryPointwise,
       {f32({5, 203}), f32({5, 203})},
       {{"function", std::string("maximum")}},
       "popsim:binary_pointwise"},
      {"conv2d_bias",
       OpKind::Convolution,
       {f32({2, 3, 9, 9}), f32({4, 3, 3, 3}), f32({4})},
       conv({1, 1}, {1, 1}, {1, 1}, 1),
       "onednn"},
      {"conv2d_grouped_strided_dilated",
       OpKind::Convolution,
       {f32({2, 4, 11, 10}), f32({6, 2, 3, 2})},
       conv({2, 1}, {1, 0}, {2, 1}, 2),
       "onednn"},
      {"conv2d_depthwise",
       OpKind::Convolution,
       {f32({1, 5, 7, 7}), f32({5, 1, 3, 3}), f32({5})},
       conv({1, 1}, {1, 1}, {1, 1}, 5),
       "onednn"},
      {"conv2d_single_tap_bias",
       OpKind::Convolution,
       {f32({3, 6, 1, 1}), f32({5, 6, 3, 3}), f32({5})},
       conv({1, 1}, {1, 1}, {1, 1}, 1),
       "gather-tap + onednn"},
      {"conv2d_single_tap_dilated_corner",
       OpKind::Convolution,
       {f32({2, 4, 1, 1}), f32({3, 4, 3, 1})},
       conv({3, 1}, {2, 0}, {1, 1}, 1),
       "gather-tap + onednn"},
      {"conv2d_grad_input_single_tap",
       OpKind::ConvolutionGradInput,
       {f32({3, 5, 1, 1}), f32({5, 6, 3, 3})},
       withShape(conv({1, 1}, {1, 1}, {1, 1}, 1), "input_shape", {3, 6, 1, 1}),
       "gather-tap + onednn"},
      {"conv2d_grad_weight_single_tap",
       OpKind::ConvolutionGradWeight,
       {f32({3, 6, 1, 1}), f32({3, 5, 1, 1})},
       withShape(conv({1, 1}, {1, 1}, {1, 1}, 1), "weight_shape", {5, 6, 3, 3}),
       "onednn"},
      {"conv1d_grouped_strided",
       OpKind::Convolution,
       {f32({2, 4, 13}), f32({6, 2, 3}), f32({6})},
       conv({2}, {1}, {2}, 2),
       "onednn"},
      {"conv3d_bias_strided_dilated",
       OpKind::Convolution,
       {f32({2, 3, 6, 7, 5}), f32({4, 3, 2, 3, 2}), f32({4})},
       conv({2, 1, 1}, {1, 0, 1}, {1, 2, 1}, 1),
       "onednn"},
      {"linear_rank3_bias", OpKind::Linear, {f32({2, 5, 7}), f32({3, 7}), f32({3})}, {}, "onednn"},
      {"linear_no_bias", OpKind::Linear, {f32({4, 6}), f32({5, 6})}, {}, "onednn"},
      {"matmul_broadcast_batch", OpKind::MatMul, {f32({2, 1, 4, 5}), f32({3, 5, 6})}, {}, "onednn"},
      {"matmul_2d", OpKind::MatMul, {f32({7, 3}), f32({3, 2})}, {}, "onednn"},
      {"relu", OpKind::Relu, {f32({3, 17})}, {}, "onednn"},
      {"gelu_erf", OpKind::Gelu, {f32({5, 9})}, {{"approximate", std::string("none")}}, "onednn"},
      {"gelu_tanh", OpKind::Gelu, {f32({5, 9})}, {{"approximate", std::string("tanh")}}, "onednn"},
      {"sigmoid", OpKind::Sigmoid, {f32({4, 4})}, {}, logisticLoops()}, // ATen's formula
      {"tanh", OpKind::Tanh, {f32({4, 4})}, {}, "onednn"},
      {"exp", OpKind::Exp, {f32({4, 4})}, {}, "onednn"},
      {"gelu_grad",
       OpKind::ActivationGrad,
       {f32({5, 203}), f32({5, 203})},
       {{"activation", std::string("gelu")}},
       pointwiseLoops(),
       -5.0f,
       5.0f},
      {"gelu_tanh_grad",
       OpKind::ActivationGrad,
       {f32({5, 203}), f32({5, 203})},
       {{"activation", std::string("gelu_tanh")}},
       pointwiseLoops(),
       -5.0f,
       5.0f},
      {"log", OpKind::Log, {f32({4, 4})}, {}, pointwiseLoops(), 0.1f, 3.0f}, // the "log" formula
      {"sqrt", OpKind::Sqrt, {f32({4, 4})}, {}, "onednn", 0.1f, 3.0f},
      {"affine", OpKind::Affine, {f32({2, 3, 4})}, {{"scale", 0.5}, {"shift", -1.25}}, "onednn"},
      {"add_same_shape", OpKind::Add, {f32({3, 4}), f32({3, 4})}, {}, "onednn"},
      {"add_broadcast_second", OpKind::Add, {f32({2, 3, 4}), f32({4})}, {}, "onednn"},
      {"add_broadcast_first", OpKind::Add, {f32({3, 1}), f32({2, 3, 4})}, {}, "onednn"},
      {"mul_both_broadcast", OpKind::Mul, {f32({3, 1}), f32({1, 4})}, {}, "reference"},
      {"sub_broadcast_first", OpKind::Sub, {f32({4}), f32({3, 4})}, {}, "reference"},
      {"sub_broadcast_second", OpKind::Sub, {f32({3, 4}), f32({3, 1})}, {}, "onednn"},
      {"div", OpKind::Div, {f32({3, 4}), f32({3, 4})}, {}, "onednn", 0.5f, 2.0f},
      {"softmax_middle_dim", OpKind::Softmax, {f32({4, 5, 6})}, {{"dim", int64_t{1}}}, "onednn"},
      {"log_softmax_last_dim",
       OpKind::LogSoftmax,
       {f32({4, 10})},
       {{"dim", int64_t{1}}},
       logSoftmaxLoops(),
       -20.0f,
       20.0f},
      {"log_softmax_middle_dim_long_rows",
       OpKind::LogSoftmax,
       {f32({3, 37, 5})},
       {{"dim", int64_t{1}}},
       logSoftmaxLoops(),
       -20.0f,
       20.0f},
      {"log_softmax_grad_last_dim",
       OpKind::LogSoftmaxGrad,
       {f32({6, 21}), f32({6, 21})},
       {{"dim", int64_t{1}}},
       logSoftmaxLoops(),
       -6.0f,
       0.0f},
      {"log_softmax_grad_middle_dim_wide",
       OpKind::LogSoftmaxGrad,
       {f32({2, 9, 21}), f32({2, 9, 21})},
       {{"dim", int64_t{1}}},
       logSoftmaxLoops(),
       -6.0f,
       0.0f},
      {"log_softmax_grad_first_dim",
       OpKind::LogSoftmaxGrad,
       {f32({19, 4}), f32({19, 4})},
       {{"dim", int64_t{0}}},
       logSoftmaxLoops(),
       -6.0f,
       0.0f},
      {"max_pool2d",
       OpKind::MaxPool2d,
       {f32({2, 3, 8, 8})},
       maxPool({2, 2}, {2, 2}, {0, 0}, {1, 1}, false),
       "vectorised"},
      {"max_pool2d_padded_dilated_ceil",
       OpKind::MaxPool2d,
       {f32({2, 3, 11, 10})},
       maxPool({3, 3}, {2, 2}, {1, 1}, {2, 1}, true),
       "vectorised"},
      {"max_pool2d_stride1_large",
       OpKind::MaxPool2d,
       {f32({2, 8, 40, 37})},
       maxPool({3, 3}, {1, 1}, {1, 1}, {1, 1}, false),
       "vectorised"},
      {"max_pool2d_stride3",
       OpKind::MaxPool2d,
       {f32({1, 2, 13, 14})},
       maxPool({3, 2}, {3, 3}, {1, 1}, {1, 1}, true),
       "vectorised"},
      {"max_pool2d_train",
       OpKind::MaxPool2dTrain,
       {f32({2, 3, 9, 8})},
       maxPool({2, 2}, {2, 2}, {0, 0}, {1, 1}, true),
       "vectorised"},
      {"max_pool2d_train_overlapping",
       OpKind::MaxPool2dTrain,
       {f32({2, 3, 9, 8})},
       maxPool({3, 3}, {2, 2}, {1, 1}, {1, 1}, false),
       "vectorised"},
      {"max_pool2d_train_large_stride3",
       OpKind::MaxPool2dTrain,
       {f32({4, 16, 31, 33})},
       maxPool({3, 3}, {3, 2}, {1, 0}, {1, 2}, true),
       "vectorised"},
      {"avg_pool2d_include_pad",
       OpKind::AvgPool2d,
       {f32({2, 3, 9, 9})},
       avgPool({3, 3}, {2, 2}, {1, 1}, false, true, 0),
       "onednn"},
      {"avg_pool2d_exclude_pad",
       OpKind::AvgPool2d,
       {f32({2, 3, 9, 9})},
       avgPool({3, 3}, {2, 2}, {1, 1}, false, false, 0),
       "onednn"},
      {"avg_pool2d_ceil_include_pad",
       OpKind::AvgPool2d,
       {f32({1, 2, 10, 10})},
       avgPool({3, 3}, {2, 2}, {1, 1}, true, true, 0),
       "reference"},
      {"avg_pool2d_divisor_override",
       OpKind::AvgPool2d,
       {f32({1, 2, 8, 8})},
       avgPool({2, 2}, {2, 2}, {0, 0}, false, true, 3),
       "reference"},
      {"adaptive_avg_pool2d_even", // 2x2 windows: oneDNN's float sums are accurate enough
       OpKind::AdaptiveAvgPool2d,
       {f32({2, 3, 4, 6})},
       {{"output_size", std::vector<int64_t>{2, 3}}},
       "onednn"},
      {"adaptive_avg_pool2d_global", // larger windows: popsim's double sums
       OpKind::AdaptiveAvgPool2d,
       {f32({2, 8, 4, 4})},
       {{"output_size", std::vector<int64_t>{1, 1}}},
       "reference"},
      {"adaptive_avg_pool2d_uneven",
       OpKind::AdaptiveAvgPool2d,
       {f32({1, 2, 7, 5})},
       {{"output_size", std::vector<int64_t>{3, 2}}},
       "reference"},
      {"batch_norm_4d",
       OpKind::BatchNorm,
       {f32({2, 3, 4, 5}), f32({3}), f32({3}), f32({3}), f32({3})},
       {{"eps", 1e-5}},
       "onednn",
       0.1f,
       2.0f},
      {"batch_norm_2d",
       OpKind::BatchNorm,
       {f32({4, 3}), f32({3}), f32({3}), f32({3}), f32({3})},
       {{"eps", 1e-3}},
       "onednn",
       0.1f,
       2.0f},
      {"layer_norm_last_dim",
       OpKind::LayerNorm,
       {f32({2, 3, 8}), f32({8}), f32({8})},
       {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}},
       "onednn"},
      {"layer_norm_two_dims",
       OpKind::LayerNorm,
       {f32({2, 3, 4}), f32({3, 4}), f32({3, 4})},
       {{"normalized_ndim", int64_t{2}}, {"eps", 1e-5}},
       "onednn"},
      {"permute",
       OpKind::Permute,
       {f32({2, 3, 4})},
       {{"perm", std::vector<int64_t>{2, 0, 1}}},
       "onednn"},
      {"slice_step",
       OpKind::Slice,
       {f32({3, 8, 2})},
       {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{7}}, {"step", int64_t{2}}},
       "onednn"},
      {"concat",
       OpKind::Concat,
       {f32({2, 1, 3}), f32({2, 4, 3}), f32({2, 2, 3})},
       {{"dim", int64_t{1}}},
       "onednn"},
      {"reduce_sum",
       OpKind::ReduceSum,
       {f32({3, 4, 5})},
       {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}},
       ""},
      {"reduce_mean_keepdim",
       OpKind::ReduceMean,
       {f32({3, 4, 5})},
       {{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", true}},
       ""},
      {"embedding",
       OpKind::Embedding,
       {f32({10, 4}), {DType::Int64, {3, 5}}},
       {{"padding_idx", int64_t{-1}}},
       "reference"},
      {"reduce_sum_bias_gradient",
       OpKind::ReduceSum,
       {f32({4, 6, 5, 5})},
       {{"dims", std::vector<int64_t>{0, 2, 3}}, {"keepdim", false}},
       ""},
      {"conv2d_grad_input",
       OpKind::ConvolutionGradInput,
       {f32({2, 4, 5, 4}), f32({4, 3, 3, 3})},
       withShape(conv({2, 1}, {1, 1}, {1, 1}, 1), "input_shape", {2, 3, 9, 4}),
       "onednn"},
      {"conv2d_grad_input_grouped",
       OpKind::ConvolutionGradInput,
       {f32({1, 6, 5, 4}), f32({6, 2, 3, 2})},
       withShape(conv({2, 1}, {1, 0}, {2, 1}, 2), "input_shape", {1, 4, 11, 5}),
       "onednn"},
      {"conv2d_grad_weight",
       OpKind::ConvolutionGradWeight,
       {f32({2, 3, 9, 4}), f32({2, 4, 5, 4})},
       withShape(conv({2, 1}, {1, 1}, {1, 1}, 1), "weight_shape", {4, 3, 3, 3}),
       "onednn"},
      {"conv3d_grad_input_grouped",
       OpKind::ConvolutionGradInput,
       {f32({2, 4, 4, 4, 3}), f32({4, 1, 2, 3, 2})},
       withShape(conv({2, 1, 2}, {1, 1, 0}, {1, 1, 1}, 2), "input_shape", {2, 2, 6, 4, 6}),
       "onednn"},
      {"conv3d_grad_weight",
       OpKind::ConvolutionGradWeight,
       {f32({2, 2, 6, 4, 6}), f32({2, 4, 4, 4, 3})},
       withShape(conv({2, 1, 2}, {1, 1, 0}, {1, 1, 1}, 1), "weight_shape", {4, 2, 2, 3, 2}),
       "onednn"},
      {"linear_grad_weight",
       OpKind::LinearGradWeight,
       {f32({2, 5, 3}), f32({2, 5, 7})},
       {},
       "onednn"},
      {"abs", OpKind::Abs, {f32({3, 5})}, {}, "onednn"},
      {"batch_norm_train",
       OpKind::BatchNormTrain,
       {f32({4, 3, 5, 5}), f32({3}), f32({3})},
       {{"eps", 1e-5}},
       "reference"},
      {"softmax_grad",
       OpKind::SoftmaxGrad,
       {f32({4, 6}), f32({4, 6})},
       {{"dim", int64_t{1}}},
       "reference"},
  };
  return cases;
}

// Buffers for a node's operands, filled with deterministic random data.
struct Operands {
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<uint8_t>> outputs;

  Operands(const ir::Node& node, const KernelCase& c) {
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const TensorType& type = node.input(i)->type();
      if (type.dtype == DType::Int64) {
        std::vector<int64_t> indices(static_cast<size_t>(type.numel()));
        for (size_t k = 0; k < indices.size(); ++k) {
          indices[k] = static_cast<int64_t>((k * 7 + 3) % 10);
        }
        inputs.emplace_back(reinterpret_cast<uint8_t*>(indices.data()),
                            reinterpret_cast<uint8_t*>(indices.data() + indices.size()));
      } else {
        inputs.push_back(testing::bytesOf(
            testing::randomFloats(type.numel(), static_cast<uint32_t>(17 + i), c.low, c.high)));
      }
    }
    for (const ir::Value* output : node.outputs()) {
      outputs.emplace_back(output->type().bytes(), 0);
    }
  }
};

class KernelTest : public ::testing::TestWithParam<KernelCase> {};

// Creates the case's kernel and runs it, here or (as the runtime does, on
// the simulated IPU's thread) on a thread other than the one that created
// it, then compares its outputs with the reference kernel's.
void checkAgainstReference(const KernelCase& c, bool onAnotherThread) {
  ir::Graph graph;
  std::vector<ir::Value*> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(graph.addInput("x" + std::to_string(i), c.inputs[i]));
  }
  const ir::Node& node = *graph.addNode(c.kind, inputs, c.attrs);

  Operands operands(node, c);
  std::vector<void*> inputPointers;
  kernels::KernelRequest request{node, {}, {}, dnnl::engine(dnnl::engine::kind::cpu, 0)};
  for (size_t i = 0; i < operands.inputs.size(); ++i) {
    inputPointers.push_back(operands.inputs[i].data());
    request.inputs.push_back({operands.inputs[i].data(), node.input(i)->type()});
  }
  for (size_t i = 0; i < operands.outputs.size(); ++i) {
    request.outputs.push_back({operands.outputs[i].data(), node.outputs()[i]->type()});
  }

  auto kernel = kernels::createKernel(request);
  ASSERT_NE(kernel, nullptr);
  // An empty expectation accepts oneDNN or the reference (oneDNN's choice
  // depends on the CPU).
  EXPECT_EQ(kernel->implementation().rfind(c.expected, 0), 0u)
      << "implementation: " << kernel->implementation();
  const auto run = [&] {
    dnnl::stream stream(request.engine);
    kernel->run(stream);
    stream.wait();
  };
  if (onAnotherThread) {
    std::thread(run).join();
  } else {
    run();
  }

  std::vector<std::vector<uint8_t>> expected;
  std::vector<void*> expectedPointers;
  for (const ir::Value* output : node.outputs()) {
    expected.emplace_back(output->type().bytes(), 0);
    expectedPointers.push_back(expected.back().data());
  }
  kernels::reference::evaluate(node, inputPointers, expectedPointers);
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!c.compared.empty() &&
        std::find(c.compared.begin(), c.compared.end(), i) == c.compared.end()) {
      continue;
    }
    if (node.outputs()[i]->type().dtype != DType::Float32) {
      EXPECT_EQ(operands.outputs[i], expected[i]) << "output " << i; // indices: exactly
      continue;
    }
    // 1e-5 relative, and 1e-5 of the output's largest magnitude as absolute
    // slack: an element near zero is a sum whose terms cancel, and its
    // rounding (which depends on the CPU's kernel) is relative to the terms.
    const auto* values = reinterpret_cast<const float*>(expected[i].data());
    const int64_t count = node.outputs()[i]->type().numel();
    double scale = 0.0;
    for (int64_t k = 0; k < count; ++k)
      scale = std::max(scale, std::fabs(static_cast<double>(values[k])));
    EXPECT_TRUE(testing::allClose(reinterpret_cast<const float*>(operands.outputs[i].data()),
                                  values, count, 1e-5, std::max(1e-6, 1e-5 * scale)))
        << "output " << i;
  }
}

TEST_P(KernelTest, MatchesReference) { checkAgainstReference(GetParam(), false); }

// oneDNN's own scratchpads belong to the thread that created the primitive
// (with the gemm convolutions of CPUs without AVX2 this crashed): every
// kernel must run on any thread.
TEST_P(KernelTest, MatchesReferenceOnAnotherThread) { checkAgainstReference(GetParam(), true); }

INSTANTIATE_TEST_SUITE_P(AllOps, KernelTest, ::testing::ValuesIn(kernelCases()),
                         [](const auto& testInfo) { return testInfo.param.name; });

TEST(KernelTest, EmbeddingIndexOutOfRangeNamesTheWeight) {
  ir::Graph graph;
  ir::Value* table = graph.addWeight("emb.weight", f32({4, 2}), true);
  ir::Value* indices = graph.addInput("ids", {DType::Int64, {3}});
  const ir::Node& node =
      *graph.addNode(OpKind::Embedding, {table, indices}, {{"padding_idx", int64_t{-1}}});
  std::vector<float> weights(8, 1.0f);
  std::vector<int64_t> ids = {0, 7, 1};
  std::vector<float> out(6);
  try {
    kernels::reference::evaluate(node, {weights.data(), ids.data()}, {out.data()});
    FAIL() << "expected an error";
  } catch (const CoreError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Execution);
    EXPECT_NE(std::string(error.what())
                  .find("index 7 (at position 1 of the indices) is out of "
                        "range for weight 'emb.weight' with 4 rows"),
              std::string::npos)
        << error.what();
  }
}

// check_range(X, Y): X checked, Y passed on (a value guard's form); a value
// outside the range is an Execution error with `what` and the value.
TEST(KernelTest, CheckRangeOfTwoInputsChecksTheFirstAndPassesTheSecond) {
  ir::Graph graph;
  ir::Value* flag = graph.addInput("flag", {DType::Int32, {}});
  ir::Value* result = graph.addInput("result", f32({3}));
  const ir::Node& node =
      *graph.addNode(OpKind::CheckRange, {flag, result},
                     {{"min", 1.0}, {"max", 1.0}, {"what", std::string("the branch changed")}});
  EXPECT_EQ(node.output()->type(), f32({3}));
  std::vector<float> values = {1.5f, -2.0f, 3.0f};
  std::vector<float> out(3);
  int32_t taken = 1;
  kernels::reference::evaluate(node, {&taken, values.data()}, {out.data()});
  EXPECT_EQ(out, values);
  taken = 0;
  const CoreError error = testing::captureError([&] {
    kernels::reference::evaluate(node, {&taken, values.data()}, {out.data()});
  });
  EXPECT_EQ(error.kind(), ErrorKind::Execution);
  EXPECT_TRUE(testing::contains(error.what(), "the branch changed: element 0 is 0."));
}

// max_pool2d_train (vectorised) records PyTorch's indices, which
// max_pool2d_grad (reference) reads: with ties and NaN the pair routes each
// gradient where PyTorch does, bit for bit.
class MaxPoolPairTest : public ::testing::TestWithParam<Attributes> {};

TEST_P(MaxPoolPairTest, GradientMatchesTheReferencePair) {
  const Attributes& attrs = GetParam();
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", f32({2, 3, 9, 8}));
  const ir::Node& forward = *graph.addNode(OpKind::MaxPool2dTrain, {x}, attrs);
  ir::Value* dy = graph.addInput("dy", forward.output(0)->type());
  const ir::Node& backward = *graph.addNode(OpKind::MaxPool2dGrad, {dy, forward.output(1)},
                                            {{"input_shape", x->type().shape}});

  // Ties: values from a handful of integers, so windows often hold equal maxima.
  std::vector<float> xs = testing::randomFloats(x->type().numel(), 5, -3.0f, 3.0f);
  for (float& value : xs)
    value = std::round(value);
  // NaN wins its window (the last NaN, for the index), and -inf loses.
  xs[3] = std::nanf("");
  xs[4] = std::nanf("");
  xs[40] = -std::numeric_limits<float>::infinity();
  xs[41] = -std::numeric_limits<float>::infinity();
  const std::vector<float> dys = testing::randomFloats(dy->type().numel(), 6);
  std::vector<float> y(static_cast<size_t>(dy->type().numel()));
  std::vector<int32_t> indices(y.size());
  std::vector<float> dx(xs.size());
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  kernels::KernelRequest forwardRequest{
      forward,
      {{xs.data(), x->type()}},
      {{y.data(), forward.output(0)->type()}, {indices.data(), forward.output(1)->type()}},
      engine};
  kernels::KernelRequest backwardRequest{
      backward,
      {{const_cast<float*>(dys.data()), dy->type()}, {indices.data(), forward.output(1)->type()}},
      {{dx.data(), backward.output()->type()}},
      engine};
  auto forwardKernel = kernels::createKernel(forwardRequest);
  auto backwardKernel = kernels::createKernel(backwardRequest);
  EXPECT_EQ(forwardKernel->implementation().rfind("vectorised", 0), 0u);
  EXPECT_EQ(backwardKernel->implementation(), "reference");
  dnnl::stream stream(engine);
  forwardKernel->run(stream);
  backwardKernel->run(stream);
  stream.wait();

  std::vector<float> expectedY(y.size());
  std::vector<int32_t> expectedIndices(y.size());
  std::vector<float> expectedDx(dx.size());
  kernels::reference::evaluate(forward, {xs.data()}, {expectedY.data(), expectedIndices.data()});
  kernels::reference::evaluate(backward, {const_cast<float*>(dys.data()), expectedIndices.data()},
                               {expectedDx.data()});
  EXPECT_EQ(std::memcmp(y.data(), expectedY.data(), y.size() * sizeof(float)), 0); // NaN too
  EXPECT_EQ(indices, expectedIndices);
  EXPECT_TRUE(std::any_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
  EXPECT_EQ(std::memcmp(dx.data(), expectedDx.data(), dx.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Geometries, MaxPoolPairTest,
                         ::testing::Values(maxPool({2, 2}, {2, 2}, {0, 0}, {1, 1}, true),
                                           maxPool({2, 3}, {3, 3}, {1, 1}, {1, 1}, false),
                                           maxPool({3, 3}, {2, 2}, {1, 1}, {1, 1}, false),
                                           maxPool({3, 3}, {1, 1}, {1, 1}, {2, 2}, false)),
                         [](const auto& param) { return std::to_string(param.index); });

} // namespace
} // namespace popsim
