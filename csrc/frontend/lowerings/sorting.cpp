// Sorting and selection: sort, argsort, msort, topk and kthvalue, from the
// sort op (a stable sort: equal values keep their order, where PyTorch's
// unstable sort leaves it unspecified; NaN above every number, as in PyTorch).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <limits>

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

// quantile(self, q, dim=None, keepdim=False, *, interpolation) and
// nanquantile, as PyTorch computes them: the slices sorted along the last
// dimension (NaN last); each quantile's rank q * (n - 1), where n counts the
// slice's numbers for nanquantile and its elements for quantile (whose slices
// holding a NaN take the last rank, a NaN); the values at the ranks below and
// above gathered and interpolated (linear: by the rank's fraction, as lerp
// does; lower, higher, nearest: one of them; midpoint: half way). A 1-D q puts
// one result per quantile in a new first dimension.
void lowerQuantile(LoweringContext& ctx) {
  const bool ignoreNaN = ctx.opName() == "aten::nanquantile";
  ir::Value* x = ctx.tensor(0);
  if (!ir::isFloat(x->type().dtype)) {
    ctx.unsupported("quantile of a " + x->type().str() +
                    " tensor (PyTorch takes float tensors only; convert it with .float())");
  }
  const ir::DType dtype = x->type().dtype;
  const bool alongAll = ctx.isNone(2);
  const bool keepdim = ctx.toBool(3);
  const std::string interpolation = ctx.toString(4);
  ir::Shape kept = x->type().shape; // the result's shape, without q's dimension
  int64_t dim = 0;
  if (alongAll) {
    for (int64_t& n : kept)
      n = 1;
    if (!keepdim) kept.clear();
    x = reshape(ctx, x, {x->type().numel()});
  } else {
    if (x->type().rank() == 0) x = reshape(ctx, x, {1});
    dim = normalizedDim(ctx, ctx.toInt(2), x->type().rank());
    if (!kept.empty()) {
      if (keepdim) {
        kept[static_cast<size_t>(dim)] = 1;
      } else {
        kept.erase(kept.begin() + dim);
      }
    }
  }
  const int64_t rank = x->type().rank();
  const int64_t n = x->type().shape[static_cast<size_t>(dim)];
  if (n == 0) ctx.unsupported("quantile of an empty slice (PyTorch raises here too)");
  // The slices along the last dimension, sorted.
  std::vector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) order.push_back(d);
  order.push_back(dim);
  ir::Value* values = sorted(ctx, permute(ctx, x, order), rank - 1, false).values;
  ir::Shape slices = values->type().shape;
  slices.back() = 1;
  // q, one per row of a [Q, 1, ..., 1] tensor (Q = 1 for a number).
  ir::Value* q = nullptr;
  bool listed = false;
  if (ctx.isTensor(1)) {
    q = castTo(ctx, ctx.tensor(1), dtype);
    if (q->type().rank() > 1) ctx.unsupported("quantile with a q of " + q->type().str());
    listed = q->type().rank() == 1;
    q = ctx.emit(ir::OpKind::CheckRange, {q},
                 {{"min", 0.0},
                  {"max", 1.0},
                  {"what", std::string("quantile() q values must be in the range [0, 1]")}});
  } else {
    const double number = ctx.toDouble(1);
    if (!(number >= 0.0 && number <= 1.0)) {
      ctx.unsupported("quantile with q=" + std::to_string(number) +
                      ": q must be in the range [0, 1] (PyTorch raises here too)");
    }
    q = constantFilled(ctx, {dtype, {}}, number);
  }
  const int64_t count = q->type().numel();
  ir::Shape perQuantile(static_cast<size_t>(rank) + 1, 1);
  perQuantile[0] = count;
  q = reshape(ctx, q, perQuantile);
  ir::Shape gathered = slices;
  gathered.insert(gathered.begin(), count);
  ir::Shape all = values->type().shape;
  all.insert(all.begin(), count);
  ir::Shape one = values->type().shape;
  one.insert(one.begin(), 1);
  values = broadcastTo(ctx, reshape(ctx, values, one), all);
  // The ranks.
  ir::Value* nan = emitBinary(ctx, "ne", values, values);
  const std::vector<int64_t> last = {rank};
  ir::Value* ranks = nullptr;
  if (ignoreNaN) {
    ir::Value* numbers = castTo(
        ctx, emitBinary(ctx, "eq", nan, constantFilled(ctx, {ir::DType::Bool, {}}, 0.0)), dtype);
    ir::Value* counted =
        ctx.emit(ir::OpKind::ReduceSum, {numbers}, {{"dims", last}, {"keepdim", true}});
    ranks = ctx.emit(ir::OpKind::Mul, {q, affine(ctx, counted, 1.0, -1.0)});
    ranks = emitPointwise(ctx, ranks, "clamp", {0.0, std::numeric_limits<double>::infinity()});
  } else {
    ir::Value* anyNaN = castTo(
        ctx, reduceExtremum(ctx, castTo(ctx, nan, ir::DType::Float32), last, true, true, "split"),
        ir::DType::Bool);
    ranks = broadcastTo(ctx, affine(ctx, q, static_cast<double>(n - 1), 0.0), gathered);
    ranks = ctx.emit(ir::OpKind::Where,
                     {anyNaN, constantFilled(ctx, {dtype, {}}, static_cast<double>(n - 1)), ranks});
  }
  ranks = broadcastTo(ctx, ranks, gathered);
  if (interpolation == "lower") {
    ranks = emitPointwise(ctx, ranks, "floor");
  } else if (interpolation == "higher") {
    ranks = emitPointwise(ctx, ranks, "ceil");
  } else if (interpolation == "nearest") {
    ranks = emitPointwise(ctx, ranks, "round");
  } else if (interpolation != "linear" && interpolation != "midpoint") {
    ctx.unsupported("quantile with interpolation='" + interpolation +
                    "' (PyTorch takes linear, lower, higher, midpoint and nearest)");
  }
  ir::Value* below = emitPointwise(ctx, ranks, "floor");
  const auto at = [&](ir::Value* positions) {
    return ctx.emit(ir::OpKind::Gather, {values, castTo(ctx, positions, ir::DType::Int64)},
                    {{"dim", rank}});
  };
  ir::Value* result = at(below);
  if (interpolation == "linear" || interpolation == "midpoint") {
    ir::Value* above = at(emitPointwise(ctx, ranks, "ceil"));
    ir::Value* weight = interpolation == "midpoint" ? constantFilled(ctx, {dtype, gathered}, 0.5)
                                                    : ctx.emit(ir::OpKind::Sub, {ranks, below});
    // lerp(below, above, weight) as PyTorch's: from the nearer end.
    ir::Value* difference = ctx.emit(ir::OpKind::Sub, {above, result});
    ir::Value* nearBelow = emitBinary(ctx, "lt", weight, constantFilled(ctx, {dtype, {}}, 0.5));
    ir::Value* fromBelow =
        ctx.emit(ir::OpKind::Add, {result, ctx.emit(ir::OpKind::Mul, {weight, difference})});
    ir::Value* fromAbove =
        ctx.emit(ir::OpKind::Sub,
                 {above, ctx.emit(ir::OpKind::Mul, {difference, affine(ctx, weight, -1.0, 1.0)})});
    result = ctx.emit(ir::OpKind::Where, {nearBelow, fromBelow, fromAbove});
  }
  ir::Shape shape = kept;
  if (listed) shape.insert(shape.begin(), count);
  ctx.setOutput(0, reshape(ctx, result, shape));
}

} // namespace

void registerSorting(LoweringRegistry& registry) {
  registry.add("aten::sort", lowerSort);
  registry.add("aten::argsort", lowerArgsort);
  registry.add("aten::msort", lowerMsort);
  registry.add("aten::topk", lowerTopk);
  registry.add("aten::kthvalue", lowerKthvalue);
  registry.add("aten::quantile", lowerQuantile);
  registry.add("aten::nanquantile", lowerQuantile);
}

} // namespace popsim::frontend::lowerings
