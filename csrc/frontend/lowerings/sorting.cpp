// Sorting and selection: sort, argsort, msort, topk and kthvalue, from the
// sort op (a stable sort: equal values keep their order, where PyTorch's
// unstable sort leaves it unspecified; NaN above every number, as in PyTorch).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

struct Sorted {
  ir::Value* values;
  ir::Value* indices;
};

Sorted sorted(LoweringContext& ctx, ir::Value* x, int64_t dim, bool descending) {
  const std::vector<ir::Value*> outputs =
      ctx.emitMulti(ir::OpKind::Sort, {x}, {{"dim", dim}, {"descending", descending}});
  return {outputs[0], outputs[1]};
}

int64_t dimOf(LoweringContext& ctx, ir::Value* x, int64_t fallback) {
  const std::optional<size_t> index = ctx.argumentIndex("dim");
  const int64_t dim = index.has_value() && !ctx.isNone(*index) ? ctx.toInt(*index) : fallback;
  return normalizedDim(ctx, dim, x->type().rank());
}

// A 0-d tensor sorts as itself, at index 0.
Sorted sortedOrScalar(LoweringContext& ctx, ir::Value* x, int64_t dim, bool descending) {
  if (x->type().rank() > 0) return sorted(ctx, x, dim, descending);
  return {x, constantFilled(ctx, {ir::DType::Int64, {}}, 0.0)};
}

// sort(self, dim=-1, descending=False) and sort(self, *, stable, dim, descending).
void lowerSort(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const Sorted s =
      sortedOrScalar(ctx, x, dimOf(ctx, x, -1), boolArgument(ctx, "descending", false));
  ctx.setOutput(0, s.values);
  ctx.setOutput(1, s.indices);
}

// argsort(self, dim=-1, descending=False) (and its stable form).
void lowerArgsort(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ctx.setOutput(
      0, sortedOrScalar(ctx, x, dimOf(ctx, x, -1), boolArgument(ctx, "descending", false)).indices);
}

// msort(self): sorted along the first dimension.
void lowerMsort(LoweringContext& ctx) {
  ctx.setOutput(0, sortedOrScalar(ctx, ctx.tensor(0), 0, false).values);
}

// topk(self, k, dim=-1, largest=True, sorted=True): the first k of a sort
// (in sorted order also for sorted=False, one order PyTorch allows).
void lowerTopk(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t k = ctx.toInt(1);
  if (x->type().rank() == 0) {
    ctx.setOutput(0, x);
    ctx.setOutput(1, constantFilled(ctx, {ir::DType::Int64, {}}, 0.0));
    return;
  }
  const int64_t dim = dimOf(ctx, x, -1);
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  if (k < 0 || k > size) {
    ctx.unsupported("topk of k=" + std::to_string(k) + " along a dimension of size " +
                    std::to_string(size));
  }
  const Sorted s = sorted(ctx, x, dim, boolArgument(ctx, "largest", true));
  ctx.setOutput(0, sliceAlong(ctx, s.values, dim, 0, k));
  ctx.setOutput(1, sliceAlong(ctx, s.indices, dim, 0, k));
}

// kthvalue(self, k, dim=-1, keepdim=False): the k-th smallest, and its index.
void lowerKthvalue(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t k = ctx.toInt(1);
  const bool scalar = x->type().rank() == 0;
  if (scalar) x = reshape(ctx, x, {1});
  const int64_t dim = dimOf(ctx, x, -1);
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  if (k < 1 || k > size) {
    ctx.unsupported("kthvalue of k=" + std::to_string(k) + " along a dimension of size " +
                    std::to_string(size));
  }
  const Sorted s = sorted(ctx, x, dim, false);
  ir::Shape shape = x->type().shape;
  if (boolArgument(ctx, "keepdim", false) && !scalar) {
    shape[static_cast<size_t>(dim)] = 1;
  } else {
    shape.erase(shape.begin() + dim);
  }
  ctx.setOutput(0, reshape(ctx, sliceAlong(ctx, s.values, dim, k - 1, k), shape));
  ctx.setOutput(1, reshape(ctx, sliceAlong(ctx, s.indices, dim, k - 1, k), shape));
}

} // namespace

void registerSorting(LoweringRegistry& registry) {
  registry.add("aten::sort", lowerSort);
  registry.add("aten::argsort", lowerArgsort);
  registry.add("aten::msort", lowerMsort);
  registry.add("aten::topk", lowerTopk);
  registry.add("aten::kthvalue", lowerKthvalue);
}

} // namespace popsim::frontend::lowerings
