// Type inference of every op family, and the exact error messages users see
// when a model's shapes do not fit (they carry the numbers involved).

#include "common/error.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Attributes;
using ir::DType;
using ir::OpKind;
using ir::TensorType;
using testing::f32;

TensorType i64(ir::Shape shape) { return {DType::Int64, std::move(shape)}; }

// The single output type of `kind` applied to `inputs`.
TensorType infer(OpKind kind, const std::vector<TensorType>& inputs, const Attributes& attrs = {}) {
  const std::vector<TensorType> outputs = ir::inferOutputTypes(kind, inputs, attrs);
  EXPECT_EQ(outputs.size(), 1u);
  return outputs.empty() ? TensorType{} : outputs[0];
}

// The Compilation error inference reports, as text.
std::string inferError(OpKind kind, const std::vector<TensorType>& inputs,
                       const Attributes& attrs = {}) {
  const CoreError error = testing::captureError([&] { ir::inferOutputTypes(kind, inputs, attrs); });
  EXPECT_EQ(error.kind(), ErrorKind::Compilation) << error.what();
  return error.what();
}

Attributes conv(std::vector<int64_t> stride, std::vector<int64_t> padding,
                std::vector<int64_t> dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

Attributes maxPool(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, bool ceil,
                   std::vector<int64_t> dilation = {1, 1}) {
  return {{"kernel", kernel},
          {"stride", stride},
          {"padding", padding},
          {"dilation", dilation},
          {"ceil_mode", ceil}};
}

Attributes avgPool(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, bool ceil) {
  return {{"kernel", kernel},  {"stride", stride},          {"padding", padding},
          {"ceil_mode", ceil}, {"count_include_pad", true}, {"divisor_override", int64_t{0}}};
}

Attributes reduce(std::vector<int64_t> dims, bool keepdim) {
  return {{"dims", dims}, {"keepdim", keepdim}};
}

Attributes slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  return {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
}

TEST(TypeInferenceTest, Conv2dOutputSize) {
  // (32 + 2 - 3) / 2 + 1 = 16
  EXPECT_EQ(infer(OpKind::Convolution, {f32({1, 3, 32, 32}), f32({8, 3, 3, 3}), f32({8})},
                  conv({2, 2}, {1, 1}, {1, 1}, 1)),
            f32({1, 8, 16, 16}));
  // Dilation 2 makes the 3x3 kernel span 5: (34 - 5) / 2 + 1 = 15.
  EXPECT_EQ(infer(OpKind::Convolution, {f32({1, 3, 32, 32}), f32({8, 3, 3, 3})},
                  conv({2, 2}, {1, 1}, {2, 2}, 1)),
            f32({1, 8, 15, 15}));
  // Per-dimension stride/padding/dilation with groups: H (10 - 5) / 1 + 1 = 6,
  // W (13 + 2 - 3) / 2 + 1 = 7.
  EXPECT_EQ(infer(OpKind::Convolution, {f32({2, 4, 10, 13}), f32({6, 2, 3, 3})},
                  conv({1, 2}, {0, 1}, {2, 1}, 2)),
            f32({2, 6, 6, 7}));
  // Depthwise.
  EXPECT_EQ(infer(OpKind::Convolution, {f32({1, 5, 7, 7}), f32({5, 1, 3, 3})},
                  conv({1, 1}, {1, 1}, {1, 1}, 5)),
            f32({1, 5, 7, 7}));
  // The kernel exactly covers the padded input.
  EXPECT_EQ(infer(OpKind::Convolution, {f32({1, 1, 3, 4}), f32({2, 1, 3, 4})},
                  conv({1, 1}, {0, 0}, {1, 1}, 1)),
            f32({1, 2, 1, 1}));
}

TEST(TypeInferenceTest, Conv2dErrors) {
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})},
                       conv({1, 1}, {0, 0}, {1, 1}, 1)),
            "convolution: weight f32[4,2,3,3] expects 2 input channels, but the input f32[1,3,8,8] "
            "has 3.");
  EXPECT_EQ(
      inferError(OpKind::Convolution, {f32({1, 6, 8, 8}), f32({4, 2, 3, 3})},
                 conv({1, 1}, {0, 0}, {1, 1}, 4)),
      "convolution: input channels (6) and output channels (4) must be divisible by groups (4).");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 4, 4}), f32({4, 3, 3, 3})},
                       conv({1, 1}, {0, 0}, {3, 1}, 1)),
            "convolution: the kernel (7 wide with dilation) is larger than the padded input (4) in "
            "spatial dimension 0.");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({3})},
                       conv({1, 1}, {0, 0}, {1, 1}, 1)),
            "convolution: input 2 (bias) must have shape [4], got [3].");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({3, 8, 8}), f32({4, 3, 3, 3})},
                       conv({1, 1}, {0, 0}, {1, 1}, 1)),
            "convolution: input 1 (weight) must have 3 dimensions, got 4 (f32[4,3,3,3]).");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({3, 8}), f32({4, 3})}, conv({}, {}, {}, 1)),
            "convolution: input 0 (input) must have 3 to 5 dimensions (batch, channels and 1 to 3 "
            "spatial ones), got 2 (f32[3,8]).");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                       conv({1}, {0, 0}, {1, 1}, 1)),
            "convolution: attribute 'stride' must have 2 values, got 1.");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                       conv({0, 1}, {0, 0}, {1, 1}, 1)),
            "convolution: stride and dilation must be >= 1 and padding >= 0, got stride [0, 1], "
            "dilation [1, 1], padding [0, 0].");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                       conv({1, 1}, {0, 0}, {1, 1}, 0)),
            "convolution: groups must be at least 1, got 0.");
}

TEST(TypeInferenceTest, Cast) {
  EXPECT_EQ(infer(OpKind::Cast, {f32({2, 3})}, {{"dtype", std::string("i64")}}),
            (TensorType{DType::Int64, {2, 3}}));
  EXPECT_EQ(inferError(OpKind::Cast, {f32({2})}, {{"dtype", std::string("f64")}}),
            "cast: cannot cast to 'f64'; the dtypes are f32, i32, i64 and bool.");
}

TEST(TypeInferenceTest, Linear) {
  EXPECT_EQ(infer(OpKind::Linear, {f32({2, 5, 7}), f32({3, 7}), f32({3})}), f32({2, 5, 3}));
  EXPECT_EQ(infer(OpKind::Linear, {f32({4, 6}), f32({5, 6})}), f32({4, 5}));
  EXPECT_EQ(infer(OpKind::Linear, {f32({6}), f32({5, 6})}), f32({5}));
  EXPECT_EQ(inferError(OpKind::Linear, {f32({4, 6}), f32({3, 5})}),
            "linear: the input f32[4,6] has 6 features but the weight f32[3,5] expects 5.");
  EXPECT_EQ(inferError(OpKind::Linear, {f32({4, 6}), f32({3, 6}), f32({4})}),
            "linear: input 2 (bias) must have shape [3], got [4].");
  EXPECT_EQ(inferError(OpKind::Linear, {f32({4, 6}), f32({3, 6, 1})}),
            "linear: input 1 (weight) must have 2 dimensions, got 3 (f32[3,6,1]).");
  EXPECT_EQ(inferError(OpKind::Linear, {i64({4, 6}), f32({3, 6})}),
            "linear: input 0 (input) must be f32 or f16, got i64[4,6].");
}

TEST(TypeInferenceTest, MatMulBroadcastsBatchDimensions) {
  EXPECT_EQ(infer(OpKind::MatMul, {f32({7, 3}), f32({3, 2})}), f32({7, 2}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({2, 1, 4, 5}), f32({3, 5, 6})}), f32({2, 3, 4, 6}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({4, 5}), f32({8, 5, 6})}), f32({8, 4, 6}));
  EXPECT_EQ(inferError(OpKind::MatMul, {f32({2, 3, 4}), f32({5, 6})}),
            "matmul: inner dimensions differ: a f32[2,3,4] has 4 columns, b f32[5,6] has 5 rows.");
  EXPECT_EQ(inferError(OpKind::MatMul, {f32({2, 4, 5}), f32({3, 5, 6})}),
            "matmul: batch dimensions [2] and [3] do not broadcast.");
  EXPECT_EQ(inferError(OpKind::MatMul, {f32({5}), f32({5, 6})}),
            "matmul: input 0 (a) must have at least 2 dimensions, got 1 (f32[5]).");
}

TEST(TypeInferenceTest, Elementwise) {
  EXPECT_EQ(infer(OpKind::Relu, {f32({3, 4})}), f32({3, 4}));
  EXPECT_EQ(infer(OpKind::Gelu, {f32({3})}, {{"approximate", std::string("tanh")}}), f32({3}));
  EXPECT_EQ(infer(OpKind::Affine, {f32({2, 2})}, {{"scale", 2.0}, {"shift", 1.0}}), f32({2, 2}));
  EXPECT_EQ(infer(OpKind::Add, {f32({3, 1}), f32({1, 4})}), f32({3, 4}));
  EXPECT_EQ(infer(OpKind::Div, {f32({2, 3, 4}), f32({})}), f32({2, 3, 4}));
  EXPECT_EQ(inferError(OpKind::Sub, {f32({3}), f32({4})}),
            "sub: shapes f32[3] and f32[4] do not broadcast.");
  EXPECT_EQ(inferError(OpKind::Gelu, {f32({3})}, {{"approximate", std::string("fast")}}),
            "gelu: approximate must be \"none\" or \"tanh\", got \"fast\".");
  EXPECT_EQ(inferError(OpKind::Exp, {i64({3})}),
            "exp: input 0 (input) must be f32 or f16, got i64[3].");
}

TEST(TypeInferenceTest, Softmax) {
  EXPECT_EQ(infer(OpKind::Softmax, {f32({4, 5, 6})}, {{"dim", int64_t{1}}}), f32({4, 5, 6}));
  EXPECT_EQ(infer(OpKind::LogSoftmax, {f32({4, 10})}, {{"dim", int64_t{1}}}), f32({4, 10}));
  EXPECT_EQ(inferError(OpKind::Softmax, {f32({4, 10})}, {{"dim", int64_t{2}}}),
            "softmax: dim 2 is out of range for f32[4,10].");
}

TEST(TypeInferenceTest, PoolingOutputSize) {
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({2, 3, 8, 8})}, maxPool({2, 2}, {2, 2}, {0, 0}, false)),
            f32({2, 3, 4, 4}));
  // 7 wide, kernel 2, stride 2: floor gives 3 windows, ceil_mode 4.
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({1, 1, 7, 7})}, maxPool({2, 2}, {2, 2}, {0, 0}, false)),
            f32({1, 1, 3, 3}));
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({1, 1, 7, 7})}, maxPool({2, 2}, {2, 2}, {0, 0}, true)),
            f32({1, 1, 4, 4}));
  // ceil_mode never starts a window in the right padding: 5 wide, kernel 2,
  // stride 2, padding 1 gives 3 windows (not ceil(5 / 2) + 1 = 4).
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({1, 1, 5, 5})}, maxPool({2, 2}, {2, 2}, {1, 1}, true)),
            f32({1, 1, 3, 3}));
  // Dilation: span 5 in H: (11 + 2 - 5 + 1) / 2 + 1 = 5 with ceil; W (10 + 2 - 3 + 1) / 2 + 1 = 6.
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({2, 3, 11, 10})},
                  maxPool({3, 3}, {2, 2}, {1, 1}, true, {2, 1})),
            f32({2, 3, 5, 6}));
  EXPECT_EQ(infer(OpKind::AvgPool2d, {f32({2, 3, 9, 9})}, avgPool({3, 3}, {2, 2}, {1, 1}, false)),
            f32({2, 3, 5, 5}));
  // (10 + 2 - 3 + 1) / 2 + 1 = 6 with ceil_mode: the last window starts at
  // input index 9, still inside the input, so it is kept.
  EXPECT_EQ(infer(OpKind::AvgPool2d, {f32({1, 2, 10, 10})}, avgPool({3, 3}, {2, 2}, {1, 1}, true)),
            f32({1, 2, 6, 6}));
  EXPECT_EQ(infer(OpKind::AvgPool2d, {f32({1, 2, 10, 10})}, avgPool({3, 3}, {2, 2}, {1, 1}, false)),
            f32({1, 2, 5, 5}));
  EXPECT_EQ(infer(OpKind::AdaptiveAvgPool2d, {f32({2, 3, 7, 5})},
                  {{"output_size", std::vector<int64_t>{3, 2}}}),
            f32({2, 3, 3, 2}));
}

TEST(TypeInferenceTest, PoolingErrors) {
  EXPECT_EQ(
      inferError(OpKind::MaxPool2d, {f32({1, 1, 4, 4})}, maxPool({2, 2}, {2, 2}, {2, 0}, false)),
      "max_pool2d: padding must be between 0 and half the kernel size, got padding [2, 0] "
      "for kernel [2, 2].");
  EXPECT_EQ(
      inferError(OpKind::MaxPool2d, {f32({1, 1, 2, 8})}, maxPool({3, 3}, {1, 1}, {0, 0}, false)),
      "max_pool2d: the input f32[1,1,2,8] is too small for kernel [3, 3] (output would be "
      "empty).");
  EXPECT_EQ(inferError(OpKind::AdaptiveAvgPool2d, {f32({1, 1, 4, 4})},
                       {{"output_size", std::vector<int64_t>{0, 2}}}),
            "adaptive_avg_pool2d: output_size must be positive, got [0, 2].");
}

TEST(TypeInferenceTest, ReductionsWithAndWithoutKeepdim) {
  EXPECT_EQ(infer(OpKind::ReduceSum, {f32({3, 4, 5})}, reduce({1}, false)), f32({3, 5}));
  EXPECT_EQ(infer(OpKind::ReduceSum, {f32({3, 4, 5})}, reduce({1}, true)), f32({3, 1, 5}));
  EXPECT_EQ(infer(OpKind::ReduceMean, {f32({3, 4, 5})}, reduce({0, 2}, true)), f32({1, 4, 1}));
  EXPECT_EQ(infer(OpKind::ReduceMean, {f32({3, 4, 5})}, reduce({0, 2}, false)), f32({4}));
  EXPECT_EQ(infer(OpKind::ReduceSum, {f32({3, 4})}, reduce({0, 1}, false)), f32({}));
  EXPECT_EQ(inferError(OpKind::ReduceSum, {f32({3, 4, 5})}, reduce({2, 1}, false)),
            "reduce_sum: dims [2, 1] must be ascending, unique and within the rank 3 of "
            "f32[3,4,5].");
  EXPECT_EQ(inferError(OpKind::ReduceMean, {f32({3, 4})}, reduce({2}, false)),
            "reduce_mean: dims [2] must be ascending, unique and within the rank 2 of f32[3,4].");
  EXPECT_EQ(inferError(OpKind::ReduceMean, {f32({3, 4})}, reduce({}, false)),
            "reduce_mean: dims must not be empty.");
}

TEST(TypeInferenceTest, Slice) {
  EXPECT_EQ(infer(OpKind::Slice, {f32({3, 8, 2})}, slice(1, 1, 7, 2)), f32({3, 3, 2}));
  EXPECT_EQ(infer(OpKind::Slice, {f32({3, 8, 2})}, slice(1, 1, 8, 3)), f32({3, 3, 2}));
  EXPECT_EQ(infer(OpKind::Slice, {f32({3, 8, 2})}, slice(0, 2, 2, 1)), f32({0, 8, 2}));
  EXPECT_EQ(infer(OpKind::Slice, {i64({10})}, slice(0, 0, 10, 4)), i64({3}));
  EXPECT_EQ(inferError(OpKind::Slice, {f32({3, 8, 2})}, slice(1, 1, 9, 1)),
            "slice: range [1, 9) is not within dimension 1 of size 8.");
  EXPECT_EQ(inferError(OpKind::Slice, {f32({3, 8, 2})}, slice(3, 0, 1, 1)),
            "slice: dim 3 is out of range for f32[3,8,2].");
  EXPECT_EQ(inferError(OpKind::Slice, {f32({3, 8, 2})}, slice(1, 0, 8, 0)),
            "slice: step must be >= 1, got 0.");
}

TEST(TypeInferenceTest, Concat) {
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 1, 3}), f32({2, 4, 3}), f32({2, 2, 3})},
                  {{"dim", int64_t{1}}}),
            f32({2, 7, 3}));
  EXPECT_EQ(infer(OpKind::Concat, {f32({5})}, {{"dim", int64_t{0}}}), f32({5}));
  EXPECT_EQ(inferError(OpKind::Concat, {f32({2, 1, 3}), f32({3, 4, 3})}, {{"dim", int64_t{1}}}),
            "concat: input 1 f32[3,4,3] does not match input 0 f32[2,1,3] outside dimension 1.");
  EXPECT_EQ(inferError(OpKind::Concat, {f32({2, 3}), i64({2, 3})}, {{"dim", int64_t{0}}}),
            "concat: input 1 i64[2,3] does not match input 0 f32[2,3] outside dimension 0.");
}

TEST(TypeInferenceTest, PermuteAndReshape) {
  EXPECT_EQ(infer(OpKind::Permute, {f32({2, 3, 4})}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
            f32({4, 2, 3}));
  EXPECT_EQ(
      inferError(OpKind::Permute, {f32({2, 3, 4})}, {{"perm", std::vector<int64_t>{0, 0, 1}}}),
      "permute: perm [0, 0, 1] is not a permutation of 0..2.");
  EXPECT_EQ(inferError(OpKind::Permute, {f32({2, 3})}, {{"perm", std::vector<int64_t>{1, 0, 2}}}),
            "permute: perm [1, 0, 2] has 3 entries for an input of rank 2.");
  EXPECT_EQ(infer(OpKind::Reshape, {i64({2, 6})}, {{"shape", std::vector<int64_t>{3, 4}}}),
            i64({3, 4}));
  EXPECT_EQ(inferError(OpKind::Reshape, {f32({2, 3})}, {{"shape", std::vector<int64_t>{4, 2}}}),
            "reshape: cannot reshape f32[2,3] (6 elements) to [4,2] (8 elements).");
  EXPECT_EQ(inferError(OpKind::Reshape, {f32({2, 3})}, {{"shape", std::vector<int64_t>{-1, 3}}}),
            "reshape: target shape [-1,3] has a negative dimension (the frontend resolves -1).");
}

TEST(TypeInferenceTest, Embedding) {
  EXPECT_EQ(infer(OpKind::Embedding, {f32({10, 4}), i64({3, 5})}, {{"padding_idx", int64_t{-1}}}),
            f32({3, 5, 4}));
  EXPECT_EQ(
      infer(OpKind::Embedding, {f32({10, 4}), {DType::Int32, {7}}}, {{"padding_idx", int64_t{0}}}),
      f32({7, 4}));
  EXPECT_EQ(inferError(OpKind::Embedding, {f32({10, 4}), f32({3})}, {{"padding_idx", int64_t{-1}}}),
            "embedding: input 1 (indices) must be i64 or i32, got f32[3].");
  EXPECT_EQ(inferError(OpKind::Embedding, {f32({10, 4}), i64({3})}, {{"padding_idx", int64_t{10}}}),
            "embedding: padding_idx 10 is out of range for 10 embeddings.");
}

TEST(TypeInferenceTest, Normalization) {
  EXPECT_EQ(infer(OpKind::LayerNorm, {f32({2, 3, 4}), f32({3, 4}), f32({3, 4})},
                  {{"normalized_ndim", int64_t{2}}, {"eps", 1e-5}}),
            f32({2, 3, 4}));
  EXPECT_EQ(inferError(OpKind::LayerNorm, {f32({2, 3, 4}), f32({4}), f32({4})},
                       {{"normalized_ndim", int64_t{2}}, {"eps", 1e-5}}),
            "layer_norm: input 1 (weight) must have shape [3,4], got [4].");
  EXPECT_EQ(inferError(OpKind::LayerNorm, {f32({2, 3}), f32({2, 3}), f32({2, 3})},
                       {{"normalized_ndim", int64_t{3}}, {"eps", 1e-5}}),
            "layer_norm: normalized_ndim 3 must be between 1 and the input rank 2.");
  EXPECT_EQ(infer(OpKind::BatchNorm, {f32({2, 3, 4, 5}), f32({3}), f32({3}), f32({3}), f32({3})},
                  {{"eps", 1e-5}}),
            f32({2, 3, 4, 5}));
  EXPECT_EQ(inferError(OpKind::BatchNorm,
                       {f32({2, 3, 4, 5}), f32({3}), f32({4}), f32({3}), f32({3})},
                       {{"eps", 1e-5}}),
            "batch_norm: input 2 (running_var) must have shape [3], got [4].");
}

TEST(TypeInferenceTest, ArityErrors) {
  EXPECT_EQ(inferError(OpKind::Relu, {f32({2}), f32({2})}), "relu: got 2 inputs, expected 1.");
  EXPECT_EQ(inferError(OpKind::Linear, {f32({2, 3})}), "linear: got 1 inputs, expected 2 to 3.");
  EXPECT_EQ(inferError(OpKind::Concat, {}, {{"dim", int64_t{0}}}),
            "concat: got 0 inputs, expected 1 to any number.");
  EXPECT_EQ(inferError(OpKind::BatchNorm, {f32({2, 3}), f32({3})}, {{"eps", 1e-5}}),
            "batch_norm: got 2 inputs, expected 5.");
}

TEST(TypeInferenceTest, AttributeErrors) {
  EXPECT_EQ(inferError(OpKind::Softmax, {f32({2, 3})}), "softmax: attribute 'dim' is missing.");
  EXPECT_EQ(inferError(OpKind::Softmax, {f32({2, 3})}, {{"dim", 1.0}}),
            "softmax: attribute 'dim' is a float, expected int.");
  EXPECT_EQ(inferError(OpKind::Relu, {f32({2, 3})}, {{"alpha", 0.1}}),
            "relu: unknown attribute 'alpha'.");
  EXPECT_EQ(inferError(OpKind::Softmax, {f32({2, 3})}, {{"dim", int64_t{1}}, {"dims", int64_t{1}}}),
            "softmax: unknown attribute 'dims'.");
  EXPECT_EQ(inferError(OpKind::Convolution, {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                       {{"stride", std::vector<int64_t>{1, 1}},
                        {"padding", std::vector<int64_t>{0, 0}},
                        {"groups", int64_t{1}}}),
            "convolution: attribute 'dilation' is missing.");
}

TEST(TypeInferenceTest, AddNodeAppendsTheSourceLocationToErrors) {
  ir::Graph graph;
  ir::Value* x = graph.addInput("x", f32({1, 3, 8, 8}));
  ir::Value* w = graph.addWeight("conv.weight", f32({4, 2, 3, 3}), true);
  const CoreError error = testing::captureError([&] {
    graph.addNode(OpKind::Convolution, {x, w}, conv({1, 1}, {0, 0}, {1, 1}, 1),
                  {"file.py", 3, "forward", "", ""});
  });
  EXPECT_EQ(error.kind(), ErrorKind::Compilation);
  EXPECT_EQ(std::string(error.what()),
            "convolution: weight f32[4,2,3,3] expects 2 input channels, but the input f32[1,3,8,8] "
            "has 3. (at file.py:3)");
  EXPECT_TRUE(graph.nodes().empty());

  // Without a known location nothing is appended.
  const CoreError unlocated = testing::captureError([&] { graph.apply(OpKind::Relu, {x, x}); });
  EXPECT_EQ(unlocated.kind(), ErrorKind::Compilation);
  EXPECT_EQ(std::string(unlocated.what()), "relu: got 2 inputs, expected 1.");
}

TEST(TypeInferenceTest, EveryOpHasASchema) {
  for (size_t i = 0; i < ir::kNumOpKinds; ++i) {
    const OpKind kind = static_cast<OpKind>(i);
    const ir::OpSchema& schema = ir::opSchema(kind);
    EXPECT_EQ(schema.kind, kind);
    EXPECT_NE(schema.inferTypes, nullptr) << schema.name();
    EXPECT_EQ(ir::opKindFromName(schema.name()), kind);
  }
  EXPECT_EQ(ir::opKindFromName("no_such_op"), std::nullopt);
  EXPECT_EQ(ir::opSchema(OpKind::Convolution).inputName(1), "input 1 (weight)");
  EXPECT_EQ(ir::opSchema(OpKind::Concat).inputName(4), "input 4");
}

} // namespace
} // namespace popsim
