#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>

namespace popsim::frontend::lowerings {
namespace {

// mean / sum over all dimensions (self, dtype=None) or over a list
// (self, dim, keepdim=False, dtype=None); an empty or None list means all.
template <ir::OpKind Kind> void lowerReduce(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const bool overDims = ctx.numInputs() >= 4;
  const size_t dtypeIndex = overDims ? 3 : 1;
  if (ctx.numInputs() > dtypeIndex && !ctx.isNone(dtypeIndex) &&
      ctx.toDType(dtypeIndex) != ir::DType::Float32) {
    ctx.unsupported("a reduction with a dtype other than float32");
  }
  const bool keepdim = overDims && ctx.toBool(2);
  std::vector<int64_t> dims;
  if (overDims && !ctx.isNone(1)) {
    for (int64_t dim : ctx.toIntList(1))
      dims.push_back(normalizedDim(ctx, dim, rank));
  }
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (rank == 0) {
    // A scalar: summing or averaging one element returns it.
    ctx.setOutput(0, x);
    return;
  }
  ctx.setOutput(0, ctx.emit(Kind, {x}, {{"dims", dims}, {"keepdim", keepdim}}));
}

// cumsum(self, dim, dtype=None): running sums in the dtype PyTorch gives
// (integer and bool tensors sum to int64), computed in float32 or int64.
void lowerCumsum(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), rank);
  ir::DType dtype = x->type().dtype == ir::DType::Float32 ? ir::DType::Float32 : ir::DType::Int64;
  if (const auto index = ctx.argumentIndex("dtype"); index && !ctx.isNone(*index)) {
    const std::optional<ir::DType> asked = ctx.toDType(*index);
    if (!asked.has_value() || *asked == ir::DType::Bool) {
      ctx.unsupported("cumsum with a dtype other than float32, int32 or int64");
    }
    dtype = *asked;
  }
  const ir::DType computed = dtype == ir::DType::Float32 ? dtype : ir::DType::Int64;
  ir::Value* sums = ctx.emit(ir::OpKind::CumulativeSum, {castTo(ctx, x, computed)},
                             {{"dim", rank == 0 ? int64_t{0} : dim}, {"reverse", false}});
  ctx.setOutput(0, inPlaceResult(ctx, castTo(ctx, sums, dtype)));
}

} // namespace

void registerReductions(LoweringRegistry& registry) {
  registry.add("aten::cumsum", lowerCumsum);
  registry.add("aten::cumsum_", lowerCumsum);
  registry.add("aten::mean", lowerReduce<ir::OpKind::ReduceMean>);
  registry.add("aten::sum", lowerReduce<ir::OpKind::ReduceSum>);
}

} // namespace popsim::frontend::lowerings
