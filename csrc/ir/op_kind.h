#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace popsim::ir {

// Every op of popsim's IR: its kind, printed name and family. Everything else
// popsim knows of an op (type rule, attributes, gradient rule, work on the
// IPU, planned temporaries) its family's file declares (ir/ops/*.cpp, the
// op schemas); kernels live in csrc/kernels, which dispatch on the family.
#define POPSIM_FOR_EACH_OP(X)                                                                      \
  X(Convolution, "convolution", Convolution)                                                       \
  X(Linear, "linear", MatMul)                                                                      \
  X(MatMul, "matmul", MatMul)                                                                      \
  X(Relu, "relu", Unary)                                                                           \
  X(Gelu, "gelu", Unary)                                                                           \
  X(Sigmoid, "sigmoid", Unary)                                                                     \
  X(Tanh, "tanh", Unary)                                                                           \
  X(Exp, "exp", Unary)                                                                             \
  X(Log, "log", Unary)                                                                             \
  X(Sqrt, "sqrt", Unary)                                                                           \
  X(Affine, "affine", Unary)                                                                       \
  X(Add, "add", Binary)                                                                            \
  X(Sub, "sub", Binary)                                                                            \
  X(Mul, "mul", Binary)                                                                            \
  X(Div, "div", Binary)                                                                            \
  X(Softmax, "softmax", Softmax)                                                                   \
  X(LogSoftmax, "log_softmax", Softmax)                                                            \
  X(MaxPool2d, "max_pool2d", Pooling)                                                              \
  X(AvgPool2d, "avg_pool2d", Pooling)                                                              \
  X(AdaptiveAvgPool2d, "adaptive_avg_pool2d", Pooling)                                             \
  X(BatchNorm, "batch_norm", Normalization)                                                        \
  X(LayerNorm, "layer_norm", Normalization)                                                        \
  X(Reshape, "reshape", Layout)                                                                    \
  X(Permute, "permute", Layout)                                                                    \
  X(Slice, "slice", Layout)                                                                        \
  X(Concat, "concat", Layout)                                                                      \
  X(ReduceSum, "reduce_sum", Reduction)                                                            \
  X(ReduceMean, "reduce_mean", Reduction)                                                          \
  X(Embedding, "embedding", Embedding)                                                             \
  X(Abs, "abs", Unary)                                                                             \
  X(Broadcast, "broadcast", Layout)                                                                \
  X(ConvolutionGradInput, "convolution_grad_input", Convolution)                                   \
  X(ConvolutionGradWeight, "convolution_grad_weight", Convolution)                                 \
  X(LinearGradWeight, "linear_grad_weight", MatMul)                                                \
  X(ActivationGrad, "activation_grad", ElementwiseGrad)                                            \
  X(SoftmaxGrad, "softmax_grad", Softmax)                                                          \
  X(LogSoftmaxGrad, "log_softmax_grad", Softmax)                                                   \
  X(MaxPool2dGrad, "max_pool2d_grad", Pooling)                                                     \
  X(AvgPool2dGrad, "avg_pool2d_grad", Pooling)                                                     \
  X(AdaptiveAvgPool2dGrad, "adaptive_avg_pool2d_grad", Pooling)                                    \
  X(MaxPool2dTrain, "max_pool2d_train", Pooling)                                                   \
  X(BatchNormTrain, "batch_norm_train", Normalization)                                             \
  X(BatchNormGrad, "batch_norm_grad", Normalization)                                               \
  X(LayerNormTrain, "layer_norm_train", Normalization)                                             \
  X(LayerNormGrad, "layer_norm_grad", Normalization)                                               \
  X(SliceGrad, "slice_grad", Layout)                                                               \
  X(SliceUpdate, "slice_update", Layout)                                                           \
  X(EmbeddingGrad, "embedding_grad", Embedding)                                                    \
  X(Dropout, "dropout", Random)                                                                    \
  X(NllLoss, "nll_loss", Loss)                                                                     \
  X(NllLossGrad, "nll_loss_grad", Loss)                                                            \
  X(Assign, "assign", Update)                                                                      \
  X(Accumulate, "accumulate", Update)                                                              \
  X(Fill, "fill", Update)                                                                          \
  X(SgdUpdate, "sgd_update", Optimizer)                                                            \
  X(AdamUpdate, "adam_update", Optimizer)                                                          \
  X(RmspropUpdate, "rmsprop_update", Optimizer)                                                    \
  X(IpuCopy, "ipu_copy", Transfer)                                                                 \
  X(StopGradient, "stop_gradient", Layout)                                                         \
  X(Cast, "cast", Layout)                                                                          \
  X(Pointwise, "pointwise", Pointwise)                                                             \
  X(PointwiseGrad, "pointwise_grad", Pointwise)                                                    \
  X(Overwrite, "overwrite", Layout)                                                                \
  X(BinaryPointwise, "binary_pointwise", BinaryFunction)                                           \
  X(BinaryPointwiseGrad, "binary_pointwise_grad", BinaryFunction)                                  \
  X(Where, "where", Where)                                                                         \
  X(ReduceExtremum, "reduce_extremum", Extremum)                                                   \
  X(ReduceExtremumGrad, "reduce_extremum_grad", Extremum)                                          \
  X(ArgExtremum, "arg_extremum", Extremum)                                                         \
  X(CumulativeSum, "cumulative_sum", Scan)                                                         \
  X(CumulativeExtremum, "cumulative_extremum", Scan)                                               \
  X(LogCumulativeSumExp, "log_cumulative_sum_exp", Scan)                                           \
  X(LogCumulativeSumExpGrad, "log_cumulative_sum_exp_grad", Scan)                                  \
  X(ReduceProduct, "reduce_product", Product)                                                      \
  X(ReduceProductGrad, "reduce_product_grad", Product)                                             \
  X(CumulativeProduct, "cumulative_product", Product)                                              \
  X(CumulativeProductGrad, "cumulative_product_grad", Product)                                     \
  X(CtcLoss, "ctc_loss", Loss)                                                                     \
  X(CtcLossGrad, "ctc_loss_grad", Loss)                                                            \
  X(CheckRange, "check_range", Check)                                                              \
  X(NoDerivative, "no_derivative", Layout)                                                         \
  X(RandomDraw, "random_draw", Random)                                                             \
  X(RandomBernoulli, "random_bernoulli", Random)                                                   \
  X(RandomPoisson, "random_poisson", Random)                                                       \
  X(IndexSelect, "index_select", Indexing)                                                         \
  X(IndexAdd, "index_add", Indexing)                                                               \
  X(Gather, "gather", Indexing)                                                                    \
  X(Scatter, "scatter", Indexing)                                                                  \
  X(ScatterReduce, "scatter_reduce", Indexing)                                                     \
  X(Sort, "sort", Sort)                                                                            \
  X(AdaptiveMaxPool2d, "adaptive_max_pool2d", Pooling)                                             \
  X(PrintTensor, "print_tensor", Check)                                                            \
  X(RecomputationCheckpoint, "recomputation_checkpoint", Layout)                                   \
  X(LambUpdate, "lamb_update", Optimizer)                                                          \
  X(LambUpdateSharded, "lamb_update_sharded", Collective)                                          \
  X(HostCall, "host_call", Host)                                                                   \
  X(GradientPlaceholder, "gradient_placeholder", CustomGradient)                                   \
  X(CustomGradient, "custom_gradient", CustomGradient)                                             \
  X(ReplicaAllReduce, "replica_all_reduce", Collective)                                            \
  X(ReplicaReduceScatter, "replica_reduce_scatter", Collective)                                    \
  X(ReplicaAllGather, "replica_all_gather", Collective)                                            \
  X(ReplicaShard, "replica_shard", Collective)

enum class OpKind : uint16_t {
#define POPSIM_OP_ENUM(kind, name, family) kind,
  POPSIM_FOR_EACH_OP(POPSIM_OP_ENUM)
#undef POPSIM_OP_ENUM
};

constexpr size_t kNumOpKinds = 0
#define POPSIM_OP_COUNT(kind, name, family) +1
    POPSIM_FOR_EACH_OP(POPSIM_OP_COUNT)
#undef POPSIM_OP_COUNT
    ;

// Ops that share a computation pattern (and a kernel builder).
enum class OpFamily {
  Convolution,
  MatMul,
  Unary,  // elementwise, one input
  Binary, // elementwise with broadcasting, two inputs
  Softmax,
  Pooling,
  Normalization,
  Layout, // moves data without arithmetic
  Reduction,
  Embedding,
  ElementwiseGrad, // gradients of activations
  Pointwise,       // the functions of ir/pointwise_functions.h and their gradients
  BinaryFunction,  // the functions of ir/binary_functions.h and their gradients
  Where,           // where(condition, a, b): a choice per element
  Extremum, // an order statistic along a dimension (max, min, median), its position, its gradient
  Scan,     // running sums, extrema and log-sum-exps along a dimension
  Product,  // products and running products along a dimension, and their gradients
  Check,    // run-time checks of input values that pass the values through
  Indexing, // slices and elements moved by an index tensor: gathers and scatters
  Sort,     // values sorted along a dimension, with their positions
  Random,   // ops drawing random numbers (dropout, random_draw, random_bernoulli)
  Loss,
  Update,     // writes weights or state in place: assign, accumulate, fill
  Optimizer,  // fused optimizer steps
  Transfer,   // inter-IPU copies, which the runtime performs itself
  Host,       // functions the host computes in the middle of a program (PopTorch's CPU ops)
  Collective, // reductions across the replicas of a replicated model
  // A torch.autograd.Function's gradient boundary and its backward's
  // placeholders: autodiff reads them, and they leave the program before it runs.
  CustomGradient,
};

std::string_view opKindName(OpKind kind);
OpFamily opFamily(OpKind kind);
std::optional<OpKind> opKindFromName(std::string_view name);

} // namespace popsim::ir
