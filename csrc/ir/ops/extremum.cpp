#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// The attributes every extremum op has: an order statistic (max, min,
// median or nanmedian) along one dimension.
void checkExtremum(const TensorType& x, const Attributes& attrs) {
  const std::string& function = attrs.getString("function");
  POPSIM_CHECK(
      function == "max" || function == "min" || function == "median" || function == "nanmedian",
      ErrorKind::Compilation,
      "function must be \"max\", \"min\", \"median\" or \"nanmedian\", got \"", function, "\".");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < x.rank(), ErrorKind::Compilation, "dim ", dim,
               " is outside the rank ", x.rank(), " of ", x.str(), ".");
  POPSIM_CHECK(x.shape[static_cast<size_t>(dim)] > 0, ErrorKind::Compilation,
               "the extremum of an empty dimension (", x.str(), ") is undefined.");
}

void checkTies(const Attributes& attrs) {
  const std::string& ties = attrs.getString("ties");
  POPSIM_CHECK(ties == "split" || ties == "split_nan" || ties == "first", ErrorKind::Compilation,
               "ties must be \"split\", \"split_nan\" or \"first\", got \"", ties, "\".");
}

TensorType reduced(const TensorType& x, int64_t dim, DType dtype) {
  Shape shape = x.shape;
  shape[static_cast<size_t>(dim)] = 1;
  return {dtype, shape};
}

// reduce_extremum(X) {function, dim, ties} -> the max, min or median along
// dim of a float, int32 or int64 tensor (kept as size 1): NaN where the slice has one (nanmedian:
// where it has only NaNs); the median of an even count is the lower of the two middle values.
// `ties` is how the gradient is shared between equal extrema: split evenly (amax: NaN throughout a
// slice whose result is NaN), split evenly with a NaN result's gradient split between the NaNs (max
// over everything), or all to the first (max along a dimension, which also returns its index).
std::vector<TensorType> inferReduceExtremum(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  requireOrdered(inputs[0], "input 0 (input)");
  checkExtremum(inputs[0], attrs);
  checkTies(attrs);
  return {reduced(inputs[0], attrs.getInt("dim"), inputs[0].dtype)};
}

// reduce_extremum_grad(dY, X, Y) -> dX.
std::vector<TensorType> inferReduceExtremumGrad(const std::vector<TensorType>& inputs,
                                                const Attributes& attrs) {
  requireFloat(inputs[1], "input 1 (input)");
  checkExtremum(inputs[1], attrs);
  checkTies(attrs);
  const TensorType expected = reduced(inputs[1], attrs.getInt("dim"), inputs[1].dtype);
  requireShape(inputs[0], expected.shape, "input 0 (grad_output)");
  requireShape(inputs[2], expected.shape, "input 2 (output)");
  return {inputs[1]};
}

// arg_extremum(X) {function, dim} -> the int64 position of the first max or
// min along dim (of the first NaN where the slice has one), or of the median
// (of equal values, the one PyTorch returns).
std::vector<TensorType> inferArgExtremum(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  requireOrdered(inputs[0], "input 0 (input)");
  checkExtremum(inputs[0], attrs);
  return {reduced(inputs[0], attrs.getInt("dim"), DType::Int64)};
}

// max/min along a dimension: to the extremum (shared or the first, as the
// op's `ties` says).
Grads reduceExtremumGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::ReduceExtremumGrad, {g[0], in(b, 0), out(b)},
                 copyAttrs(nodeOf(b).attrs(), {"function", "dim", "ties"}))};
}

} // namespace

void registerExtremumOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {
      {"function", AttrType::String}, {"dim", AttrType::Int}, {"ties", AttrType::String}};
  registry.add(OpKind::ReduceExtremum, 1, 1, {"input"}, attrs, inferReduceExtremum);
  registry.add(OpKind::ReduceExtremumGrad, 3, 3, {"grad_output", "input", "output"}, attrs,
               inferReduceExtremumGrad);
  registry.add(OpKind::ArgExtremum, 1, 1, {"input"},
               {{"function", AttrType::String}, {"dim", AttrType::Int}}, inferArgExtremum);
  registry.setGradient(OpKind::ReduceExtremum, reduceExtremumGradient);
  registry.setWork(OpKind::ReduceExtremum, work::reduction<1>);
  registry.setWork(OpKind::ArgExtremum, work::reduction<1>);
  registry.setWork(OpKind::ReduceExtremumGrad, work::elementwise<1>);
}

} // namespace popsim::ir::ops
