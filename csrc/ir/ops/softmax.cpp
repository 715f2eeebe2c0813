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

} // namespace

void registerSoftmaxOps(OpRegistry& registry) {
  registry.add(OpKind::Softmax, 1, 1, {"input"}, {{"dim", AttrType::Int}}, inferSoftmax);
  registry.add(OpKind::LogSoftmax, 1, 1, {"input"}, {{"dim", AttrType::Int}}, inferSoftmax);
}

} // namespace popsim::ir::ops
