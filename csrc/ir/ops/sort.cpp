#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// sort(X) {dim, descending} -> (values, int64 indices) along dim, NaN
// ordered above every number (last ascending, first descending), equal
// values in their original order (a stable sort).
std::vector<TensorType> inferSort(const std::vector<TensorType>& inputs, const Attributes& attrs) {
  const TensorType& x = inputs[0];
  POPSIM_CHECK(isFloat(x.dtype) || x.dtype == DType::Int64 || x.dtype == DType::Int32,
               ErrorKind::Compilation, "sort orders float, int32 or int64 tensors, got ", x.str(),
               ".");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < x.rank(), ErrorKind::Compilation, "sort: dim ", dim,
               " is outside the rank ", x.rank(), " of ", x.str(), ".");
  return {x, {DType::Int64, x.shape}};
}

// sort: each value's gradient goes back to where the value came from.
Grads sortValuesGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "sort indices reach the loss.");
  return {b.emit(OpKind::Scatter, {b.zeros(in(b, 0)->type().shape), out(b, 1), g[0]},
                 {{"dim", nodeOf(b).attrs().getInt("dim")}, {"reduce", std::string("sum")}})};
}

} // namespace

void registerSortOps(OpRegistry& registry) {
  registry.add(OpKind::Sort, 1, 1, {"input"},
               {{"dim", AttrType::Int}, {"descending", AttrType::Bool}}, inferSort);
  registry.setGradient(OpKind::Sort, sortValuesGradient);
  registry.setWork(OpKind::Sort, work::reduction<1>);
}

} // namespace popsim::ir::ops
