#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace popsim::ir {

// Every op of popsim's IR, with its printed name. Type rules and attributes
// live in the op schemas (ir/ops/*.cpp); kernels in csrc/kernels.
#define POPSIM_FOR_EACH_OP(X)                                                                      \
  X(Conv2d, "conv2d")                                                                              \
  X(Linear, "linear")                                                                              \
  X(MatMul, "matmul")                                                                              \
  X(Relu, "relu")                                                                                  \
  X(Gelu, "gelu")                                                                                  \
  X(Sigmoid, "sigmoid")                                                                            \
  X(Tanh, "tanh")                                                                                  \
  X(Exp, "exp")                                                                                    \
  X(Log, "log")                                                                                    \
  X(Sqrt, "sqrt")                                                                                  \
  X(Affine, "affine")                                                                              \
  X(Add, "add")                                                                                    \
  X(Sub, "sub")                                                                                    \
  X(Mul, "mul")                                                                                    \
  X(Div, "div")                                                                                    \
  X(Softmax, "softmax")                                                                            \
  X(LogSoftmax, "log_softmax")                                                                     \
  X(MaxPool2d, "max_pool2d")                                                                       \
  X(AvgPool2d, "avg_pool2d")                                                                       \
  X(AdaptiveAvgPool2d, "adaptive_avg_pool2d")                                                      \
  X(BatchNorm, "batch_norm")                                                                       \
  X(LayerNorm, "layer_norm")                                                                       \
  X(Reshape, "reshape")                                                                            \
  X(Permute, "permute")                                                                            \
  X(Slice, "slice")                                                                                \
  X(Concat, "concat")                                                                              \
  X(ReduceSum, "reduce_sum")                                                                       \
  X(ReduceMean, "reduce_mean")                                                                     \
  X(Embedding, "embedding")

enum class OpKind : uint16_t {
#define POPSIM_OP_ENUM(kind, name) kind,
  POPSIM_FOR_EACH_OP(POPSIM_OP_ENUM)
#undef POPSIM_OP_ENUM
};

constexpr size_t kNumOpKinds = 0
#define POPSIM_OP_COUNT(kind, name) +1
    POPSIM_FOR_EACH_OP(POPSIM_OP_COUNT)
#undef POPSIM_OP_COUNT
    ;

std::string_view opKindName(OpKind kind);
std::optional<OpKind> opKindFromName(std::string_view name);

} // namespace popsim::ir
