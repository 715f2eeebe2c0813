#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

#include <algorithm>

// Running results along one dimension: sums, extrema with their positions,
// and log-sum-exps. A 0-d tensor scans as one element along dim 0.
namespace popsim::ir::ops {
namespace {

void checkScanDim(const TensorType& x, const Attributes& attrs, std::string_view op) {
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < std::max<int64_t>(x.rank(), 1), ErrorKind::Compilation, op,
               ": dim ", dim, " is outside the rank ", x.rank(), " of ", x.str(), ".");
}

// cumulative_sum(X) {dim, reverse} -> the running sums of X along dim (from
// the end when reverse, which is the sum's gradient), float32 or int64.
std::vector<TensorType> inferCumulativeSum(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  const TensorType& x = inputs[0];
  POPSIM_CHECK(isFloat(x.dtype) || x.dtype == DType::Int64, ErrorKind::Compilation,
               "cumulative_sum sums float or int64 tensors, got ", x.str(), ".");
  checkScanDim(x, attrs, "cumulative_sum");
  return {x};
}

// cumulative_extremum(X) {function, dim} -> (the running max or min along
// dim, the int64 position it was taken from), as PyTorch's cummax/cummin:
// NaN, once met, stays; an equal value moves the position to the later one.
std::vector<TensorType> inferCumulativeExtremum(const std::vector<TensorType>& inputs,
                                                const Attributes& attrs) {
  const TensorType& x = inputs[0];
  POPSIM_CHECK(isFloat(x.dtype) || x.dtype == DType::Int64 || x.dtype == DType::Int32,
               ErrorKind::Compilation,
               "cumulative_extremum orders float, int32 or int64 tensors, got ", x.str(), ".");
  const std::string& function = attrs.getString("function");
  POPSIM_CHECK(function == "max" || function == "min", ErrorKind::Compilation,
               "cumulative_extremum: function must be \"max\" or \"min\", got \"", function, "\".");
  checkScanDim(x, attrs, "cumulative_extremum");
  return {x, {DType::Int64, x.shape}};
}

// log_cumulative_sum_exp(X) {dim} -> log(cumsum(exp(X))) along dim, each
// step a log-add-exp (so no exp overflows or underflows), as logcumsumexp.
std::vector<TensorType> inferLogCumulativeSumExp(const std::vector<TensorType>& inputs,
                                                 const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (input)");
  checkScanDim(inputs[0], attrs, "log_cumulative_sum_exp");
  return {inputs[0]};
}

// log_cumulative_sum_exp_grad(dY, X, Y) {dim} -> dX.
std::vector<TensorType> inferLogCumulativeSumExpGrad(const std::vector<TensorType>& inputs,
                                                     const Attributes& attrs) {
  requireFloat(inputs[1], "input 1 (input)");
  checkScanDim(inputs[1], attrs, "log_cumulative_sum_exp_grad");
  requireShape(inputs[0], inputs[1].shape, "input 0 (grad_output)");
  requireShape(inputs[2], inputs[1].shape, "input 2 (output)");
  return {inputs[1]};
}

// cumsum: each input element reaches every later output, so its gradient is
// the running sum of the output gradient from the end (PyTorch's flip-cumsum-flip).
Grads cumulativeSumGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::CumulativeSum, {g[0]},
                 {{"dim", nodeOf(b).attrs().getInt("dim")},
                  {"reverse", !nodeOf(b).attrs().getBool("reverse")}})};
}

// cummax / cummin: each output's gradient goes to the position its value
// came from (positions taken many times sum them), as PyTorch's scatter_add.
Grads cumulativeExtremumGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "cumulative_extremum positions reach the loss.");
  const TensorType& x = in(b, 0)->type();
  if (x.rank() == 0) return {g[0]};
  return {b.emit(OpKind::Scatter, {b.zeros(x.shape), out(b, 1), g[0]},
                 {{"dim", nodeOf(b).attrs().getInt("dim")}, {"reduce", std::string("sum")}})};
}

Grads logCumulativeSumExpGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::LogCumulativeSumExpGrad, {g[0], in(b, 0), out(b)},
                 copyAttrs(nodeOf(b).attrs(), {"dim"}))};
}

} // namespace

void registerScanOps(OpRegistry& registry) {
  const std::vector<AttrSpec> dim = {{"dim", AttrType::Int}};
  registry.add(OpKind::CumulativeSum, 1, 1, {"input"},
               {{"dim", AttrType::Int}, {"reverse", AttrType::Bool}}, inferCumulativeSum);
  registry.add(OpKind::CumulativeExtremum, 1, 1, {"input"},
               {{"function", AttrType::String}, {"dim", AttrType::Int}}, inferCumulativeExtremum);
  registry.add(OpKind::LogCumulativeSumExp, 1, 1, {"input"}, dim, inferLogCumulativeSumExp);
  registry.add(OpKind::LogCumulativeSumExpGrad, 3, 3, {"grad_output", "input", "output"}, dim,
               inferLogCumulativeSumExpGrad);
  registry.setGradient(OpKind::CumulativeSum, cumulativeSumGradient);
  registry.setGradient(OpKind::CumulativeExtremum, cumulativeExtremumGradient);
  registry.setGradient(OpKind::LogCumulativeSumExp, logCumulativeSumExpGradient);
  for (OpKind kind : {OpKind::CumulativeSum, OpKind::CumulativeExtremum,
                      OpKind::LogCumulativeSumExp, OpKind::LogCumulativeSumExpGrad}) {
    registry.setWork(kind, work::elementwise<1>);
  }
}

} // namespace popsim::ir::ops
