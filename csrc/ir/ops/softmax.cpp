#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// softmax / log_softmax along a non-negative dimension `dim`.
std::vector<TensorType> inferSoftmax(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireFloat(x, "input 0 (input)");
  requireMinRank(x, 1, "input 0 (input)");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < x.rank(), ErrorKind::Compilation, "dim ", dim,
               " is out of range for ", x.str(), ".");
  return {x};
}

// softmax_grad / log_softmax_grad(dY, Y) along dim.
std::vector<TensorType> inferSoftmaxGrad(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  requireFloats(inputs);
  requireShape(inputs[1], inputs[0].shape, "input 1 (output)");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < inputs[0].rank(), ErrorKind::Compilation, "dim ", dim,
               " is out of range for ", inputs[0].str(), ".");
  return {inputs[0]};
}

Grads softmaxGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  const OpKind kind =
      nodeOf(b).kind() == OpKind::Softmax ? OpKind::SoftmaxGrad : OpKind::LogSoftmaxGrad;
  return {b.emit(kind, {g[0], out(b)}, copyAttrs(nodeOf(b).attrs(), {"dim"}))};
}

} // namespace

void registerSoftmaxOps(OpRegistry& registry) {
  registry.add(OpKind::Softmax, 1, 1, {"input"}, {{"dim", AttrType::Int}}, inferSoftmax);
  registry.add(OpKind::LogSoftmax, 1, 1, {"input"}, {{"dim", AttrType::Int}}, inferSoftmax);
  for (OpKind kind : {OpKind::SoftmaxGrad, OpKind::LogSoftmaxGrad}) {
    registry.add(kind, 2, 2, {"grad_output", "output"}, {{"dim", AttrType::Int}}, inferSoftmaxGrad);
  }
  registry.setGradient(OpKind::Softmax, softmaxGradient);
  registry.setGradient(OpKind::LogSoftmax, softmaxGradient);
  registry.setWork(OpKind::Softmax, work::reduction<3>);
  registry.setWork(OpKind::LogSoftmax, work::reduction<3>);
  registry.setWork(OpKind::SoftmaxGrad, work::reduction<2>);
  registry.setWork(OpKind::LogSoftmaxGrad, work::reduction<2>);
}

} // namespace popsim::ir::ops
