#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

#include <algorithm>

namespace popsim::ir::ops {
namespace {

// linear(input[...,K], weight[N,K], bias[N]?) -> [...,N], as torch.nn.functional.linear.
std::vector<TensorType> inferLinear(const std::vector<TensorType>& inputs, const Attributes&) {
  const TensorType& x = inputs[0];
  const TensorType& w = inputs[1];
  requireMinRank(x, 1, "input 0 (input)");
  requireRank(w, 2, "input 1 (weight)");
  requireFloat(x, "input 0 (input)");
  requireDType(w, x.dtype, "input 1 (weight)");
  POPSIM_CHECK(x.shape.back() == w.shape[1], ErrorKind::Compilation, "the input ", x.str(), " has ",
               x.shape.back(), " features but the weight ", w.str(), " expects ", w.shape[1], ".");
  if (inputs.size() == 3) {
    requireDType(inputs[2], x.dtype, "input 2 (bias)");
    requireShape(inputs[2], {w.shape[0]}, "input 2 (bias)");
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  return {{x.dtype, out}};
}

// matmul(a[...,M,K], b[...,K,N]) -> [broadcast(...),M,N]. The frontend turns
// torch.matmul's 1-D cases into this form with reshapes.
std::vector<TensorType> inferMatMul(const std::vector<TensorType>& inputs, const Attributes&) {
  const TensorType& a = inputs[0];
  const TensorType& b = inputs[1];
  requireMinRank(a, 2, "input 0 (a)");
  requireMinRank(b, 2, "input 1 (b)");
  requireFloat(a, "input 0 (a)");
  requireDType(b, a.dtype, "input 1 (b)");
  const int64_t m = a.shape[a.shape.size() - 2];
  const int64_t k = a.shape.back();
  const int64_t kb = b.shape[b.shape.size() - 2];
  const int64_t n = b.shape.back();
  POPSIM_CHECK(k == kb, ErrorKind::Compilation, "inner dimensions differ: a ", a.str(), " has ", k,
               " columns, b ", b.str(), " has ", kb, " rows.");
  const Shape batchA(a.shape.begin(), a.shape.end() - 2);
  const Shape batchB(b.shape.begin(), b.shape.end() - 2);
  auto batch = broadcastShapes(batchA, batchB);
  POPSIM_CHECK(batch.has_value(), ErrorKind::Compilation, "batch dimensions ",
               shapeToString(batchA), " and ", shapeToString(batchB), " do not broadcast.");
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return {{a.dtype, out}};
}

// linear_grad_weight(dY[...,N], X[...,K]) -> dW[N,K]: the sum over leading
// dimensions of dY^T X.
std::vector<TensorType> inferLinearGradWeight(const std::vector<TensorType>& inputs,
                                              const Attributes&) {
  requireFloats(inputs);
  const TensorType& dy = inputs[0];
  const TensorType& x = inputs[1];
  requireMinRank(dy, 1, "input 0 (grad_output)");
  requireMinRank(x, 1, "input 1 (input)");
  POPSIM_CHECK(dy.numel() / dy.shape.back() == x.numel() / x.shape.back(), ErrorKind::Compilation,
               "grad_output ", dy.str(), " and input ", x.str(), " have different row counts.");
  return {typed(dy, {dy.shape.back(), x.shape.back()})};
}

Grads linearGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* dy = g[0];
  const int64_t n = dy->type().shape.back();
  const int64_t rows = dy->type().numel() / n;
  if (needed[0]) {
    Value* dx = b.emit(OpKind::MatMul, {b.reshape(dy, {rows, n}), in(b, 1)});
    result[0] = b.reshape(dx, in(b, 0)->type().shape);
  }
  if (needed[1]) {
    result[1] = b.emit(OpKind::LinearGradWeight, {dy, in(b, 0)});
  }
  if (result.size() == 3 && needed[2]) {
    result[2] = dy->type().rank() == 1
                    ? dy
                    : b.emit(OpKind::ReduceSum, {dy},
                             {{"dims", allDimsExcept(dy->type().rank(), dy->type().rank() - 1)},
                              {"keepdim", false}});
  }
  return result;
}

// y = a @ b: da = dy @ b^T, db = a^T @ dy, each summed over broadcast batch dimensions.
Grads matmulGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (needed[0]) {
    Value* da = b.emit(OpKind::MatMul, {g[0], b.transposeLast(in(b, 1))});
    result[0] = b.sumToShape(da, in(b, 0)->type().shape);
  }
  const Shape& aShape = in(b, 0)->type().shape;
  if (needed[1] && in(b, 1)->type().rank() == 2 && aShape.size() >= 3) {
    // A matrix shared by a batch (x @ W): the batch folds into the sum,
    // db = a[rows, K]^T @ dy[rows, N], as PyTorch's matmul folds it; a
    // product per batch element summed afterwards would hold a [batch, K, N]
    // temporary (1.4 GB for BERT's tied decoder).
    const int64_t k = aShape.back();
    const int64_t rows = in(b, 0)->type().numel() / k;
    const int64_t n = g[0]->type().shape.back();
    result[1] = b.emit(OpKind::MatMul, {b.transposeLast(b.reshape(in(b, 0), {rows, k})),
                                        b.reshape(g[0], {rows, n})});
  } else if (needed[1]) {
    Value* db = b.emit(OpKind::MatMul, {b.transposeLast(in(b, 0)), g[0]});
    result[1] = b.sumToShape(db, in(b, 1)->type().shape);
  }
  return result;
}

// A multiply-accumulate per output element and inner index: linear's
// output [..., N] sums over the weight's K, matmul's over a's last
// dimension, and the weight gradient dW[N, K] over every row of dY and X.
// The tiles exchange the operand blocks of its product (costs/cost_model.h).
OpWork matmulWork(const Node& node) {
  const TensorType& out = node.output()->type();
  const Shape& a = node.input(0)->type().shape;
  OpWork work;
  OpWork::Product& product = work.product;
  switch (node.kind()) {
  case OpKind::Linear: // [rows, K] x [K, N]
    product.n = static_cast<uint64_t>(out.shape.back());
    product.k = static_cast<uint64_t>(node.input(1)->type().shape[1]);
    product.m = static_cast<uint64_t>(out.numel()) / product.n;
    break;
  case OpKind::LinearGradWeight: // dW[N, K] = dY^T [N, rows] x X [rows, K]
    product.m = static_cast<uint64_t>(out.shape[0]);
    product.n = static_cast<uint64_t>(out.shape[1]);
    product.k = static_cast<uint64_t>(node.input(0)->type().numel()) / product.m;
    break;
  default: { // [..., M, K] x [..., K, N], batched over the leading dimensions
    const Shape& b = node.input(1)->type().shape;
    product.k = static_cast<uint64_t>(a.back());
    product.n = b.size() >= 2 ? static_cast<uint64_t>(b.back()) : 1;
    product.m = a.size() >= 2 ? static_cast<uint64_t>(a[a.size() - 2]) : 1;
    product.groups =
        std::max<uint64_t>(1, static_cast<uint64_t>(out.numel()) / (product.m * product.n));
  }
  }
  work.macs = product.groups * product.m * product.k * product.n;
  work.macType = node.input(0)->type().dtype;
  return work;
}

} // namespace

void registerMatMulOps(OpRegistry& registry) {
  registry.add(OpKind::Linear, 2, 3, {"input", "weight", "bias"}, {}, inferLinear);
  registry.add(OpKind::MatMul, 2, 2, {"a", "b"}, {}, inferMatMul);
  registry.add(OpKind::LinearGradWeight, 2, 2, {"grad_output", "input"}, {}, inferLinearGradWeight);
  registry.setGradient(OpKind::Linear, linearGradient);
  registry.setGradient(OpKind::MatMul, matmulGradient);
  registry.setWork(OpKind::Linear, matmulWork);
  registry.setWork(OpKind::MatMul, matmulWork);
  registry.setWork(OpKind::LinearGradWeight, matmulWork);
  registry.setPlannedTemporaries(OpKind::Linear);
  registry.setPlannedTemporaries(OpKind::MatMul);
  registry.setPlannedTemporaries(OpKind::LinearGradWeight);
}

} // namespace popsim::ir::ops
