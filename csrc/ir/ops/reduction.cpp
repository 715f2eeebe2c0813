#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// reduce_sum / reduce_mean over `dims` (ascending, unique, non-negative), of
// float32 tensors; reduce_sum also of int64 ones (exact, wrapping as int64).
template <OpKind Kind>
std::vector<TensorType> inferReduce(const std::vector<TensorType>& inputs,
                                    const Attributes& attrs) {
  const TensorType& x = inputs[0];
  if (Kind == OpKind::ReduceMean || x.dtype != DType::Int64) {
    requireFloat(x, "input 0 (input)");
  }
  const auto& dims = attrs.getInts("dims");
  const bool keepdim = attrs.getBool("keepdim");
  POPSIM_CHECK(!dims.empty(), ErrorKind::Compilation, "dims must not be empty.");
  for (size_t i = 0; i < dims.size(); ++i) {
    POPSIM_CHECK(dims[i] >= 0 && dims[i] < x.rank() && (i == 0 || dims[i] > dims[i - 1]),
                 ErrorKind::Compilation, "dims ", listToString(dims),
                 " must be ascending, unique and within the rank ", x.rank(), " of ", x.str(), ".");
  }
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const bool reduced = next < dims.size() && dims[next] == d;
    if (reduced) {
      ++next;
      if (keepdim) {
        out.push_back(1);
      }
    } else {
      out.push_back(x.shape[d]);
    }
  }
  return {{x.dtype, out}};
}

} // namespace

void registerReductionOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"dims", AttrType::Ints}, {"keepdim", AttrType::Bool}};
  registry.add(OpKind::ReduceSum, 1, 1, {"input"}, attrs, inferReduce<OpKind::ReduceSum>);
  registry.add(OpKind::ReduceMean, 1, 1, {"input"}, attrs, inferReduce<OpKind::ReduceMean>);
}

} // namespace popsim::ir::ops
