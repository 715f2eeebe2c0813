#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

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

} // namespace

void registerMatMulOps(OpRegistry& registry) {
  registry.add(OpKind::Linear, 2, 3, {"input", "weight", "bias"}, {}, inferLinear);
  registry.add(OpKind::MatMul, 2, 2, {"a", "b"}, {}, inferMatMul);
}

} // namespace popsim::ir::ops
