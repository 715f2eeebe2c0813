#include "ir/ops/gradient_helpers.h"
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

// The gradient of a reduction is spread back over the reduced dimensions.
Grads reduceGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  const ir::Shape& shape = in(b, 0)->type().shape;
  ir::Shape kept = shape;
  int64_t count = 1;
  for (int64_t dim : nodeOf(b).attrs().getInts("dims")) {
    kept[static_cast<size_t>(dim)] = 1;
    count *= shape[static_cast<size_t>(dim)];
  }
  Value* spread = b.emit(OpKind::Broadcast, {b.reshape(g[0], kept)}, {{"shape", shape}});
  if (nodeOf(b).kind() == OpKind::ReduceMean) {
    spread = b.affine(spread, 1.0 / static_cast<double>(count), 0.0);
  }
  return {spread};
}

} // namespace

void registerReductionOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"dims", AttrType::Ints}, {"keepdim", AttrType::Bool}};
  registry.add(OpKind::ReduceSum, 1, 1, {"input"}, attrs, inferReduce<OpKind::ReduceSum>);
  registry.add(OpKind::ReduceMean, 1, 1, {"input"}, attrs, inferReduce<OpKind::ReduceMean>);
  registry.setGradient(OpKind::ReduceSum, reduceGradient);
  registry.setGradient(OpKind::ReduceMean, reduceGradient);
  registry.setWork(OpKind::ReduceSum, work::reduction<1>);
  registry.setWork(OpKind::ReduceMean, work::reduction<1>);
}

} // namespace popsim::ir::ops
