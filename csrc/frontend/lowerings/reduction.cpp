// Sums, means and products: sum, mean, nansum, count_nonzero, prod, cumsum
// and cumprod, with PyTorch's result dtypes (integer and bool tensors sum
// and multiply to int64, or to the dtype asked).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>

namespace popsim::frontend::lowerings {
namespace {

// The result dtype of a sum or product of x as PyTorch gives it: the dtype
// asked, else float32 for float32 and int64 for integers and bool.
ir::DType widenedDType(LoweringContext& ctx, ir::Value* x) {
  if (const std::optional<ir::DType> asked = dtypeArgument(ctx)) return *asked;
  return ir::isFloat(x->type().dtype) ? x->type().dtype : ir::DType::Int64;
}

// The dtype such a result is computed in: float32 or int64 (int32 results
// wrap as the low 32 bits of the int64 ones, as they do in PyTorch; bool
// ones are nonzero counts, or products, of the values as bools).
ir::DType computedDType(ir::DType result) {
  return ir::isFloat(result) ? result : ir::DType::Int64;
}

// x as the sum or product of dtype `result` reads it: converted to the result
// dtype first, as PyTorch converts it (so with dtype=torch.bool every nonzero
// value counts as one), in the dtype it is computed in.
ir::Value* reductionOperand(LoweringContext& ctx, ir::Value* x, ir::DType result) {
  if (result == ir::DType::Bool) x = castTo(ctx, x, ir::DType::Bool);
  return castTo(ctx, x, computedDType(result));
}

// The reduced dims of the `dim` argument at `index` (an int, a list, or None
// or an empty list for all), sorted and unique.
std::vector<int64_t> reducedDims(LoweringContext& ctx, std::optional<size_t> index, int64_t rank) {
  std::vector<int64_t> dims;
  if (index.has_value() && !ctx.isNone(*index)) {
    for (int64_t dim : ctx.toIntList(*index))
      dims.push_back(normalizedDim(ctx, dim, rank));
  }
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

// reduce_sum / reduce_mean of x over the op's `dim` argument (all when absent).
ir::Value* sumOver(LoweringContext& ctx, ir::OpKind kind, ir::Value* x) {
  const int64_t rank = x->type().rank();
  if (rank == 0) return x; // one element: its sum and its mean
  const std::vector<int64_t> dims = reducedDims(ctx, ctx.argumentIndex("dim"), rank);
  return ctx.emit(kind, {x}, {{"dims", dims}, {"keepdim", boolArgument(ctx, "keepdim")}});
}

// sum(self, dim=None, keepdim=False, dtype=None), in every overload.
void lowerSum(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::DType dtype = widenedDType(ctx, x);
  ir::Value* sum = sumOver(ctx, ir::OpKind::ReduceSum, reductionOperand(ctx, x, dtype));
  ctx.setOutput(0, castTo(ctx, sum, dtype));
}

// sum_to_size(self, size): the sum over the dimensions by which `size`
// broadcasts to self's shape (its leading extra ones, and those where size
// has 1), in self's dtype, as PyTorch's.
void lowerSumToSize(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape& from = x->type().shape;
  const std::vector<int64_t> size = ctx.toIntList(1);
  const size_t extra = from.size() >= size.size() ? from.size() - size.size() : 0;
  bool broadcasts = from.size() >= size.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < from.size() && broadcasts; ++d) {
    if (d < extra || (size[d - extra] == 1 && from[d] != 1)) {
      dims.push_back(static_cast<int64_t>(d));
    } else {
      broadcasts = size[d - extra] == from[d];
    }
  }
  if (!broadcasts) {
    ctx.unsupported("sum_to_size of " + x->type().str() + " to " + ir::shapeToString(size) +
                    ": the size must broadcast to the tensor's shape (PyTorch raises here too)");
  }
  ir::Value* summed =
      dims.empty() ? x : ctx.emit(ir::OpKind::ReduceSum, {x}, {{"dims", dims}, {"keepdim", true}});
  ctx.setOutput(0, reshape(ctx, summed, size));
}

// mean(self, dim=None, keepdim=False, dtype=None): of floats only, as in PyTorch.
void lowerMean(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const std::optional<ir::DType> asked = dtypeArgument(ctx);
  const ir::DType dtype = asked.value_or(x->type().dtype);
  if (!ir::isFloat(dtype)) {
    ctx.unsupported("mean of a " + x->type().str() +
                    " tensor: PyTorch averages floating-point tensors only; convert it with "
                    ".float() or pass dtype=torch.float32");
  }
  ctx.setOutput(0, sumOver(ctx, ir::OpKind::ReduceMean, castTo(ctx, x, dtype)));
}

// nansum: the sum with NaNs counted as zero (which also gives them a zero
// gradient, as PyTorch's).
void lowerNansum(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (!ir::isFloat(x->type().dtype)) return lowerSum(ctx); // no NaN to skip
  const ir::DType dtype = dtypeArgument(ctx).value_or(x->type().dtype);
  if (!ir::isFloat(dtype)) {
    ctx.unsupported("nansum of a float tensor into an integer dtype");
  }
  x = castTo(ctx, x, dtype); // dtype=: the input converted first, as in PyTorch
  ctx.setOutput(0, sumOver(ctx, ir::OpKind::ReduceSum, emitPointwise(ctx, x, "nan_to_zero")));
}

// nanmean(self, dim=None, keepdim=False, dtype=None): PyTorch's formula,
// the nansum divided by the count of numbers (counted in int64, then as the
// sum's dtype; NaN where a slice has none).
void lowerNanmean(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const ir::DType dtype = dtypeArgument(ctx).value_or(x->type().dtype);
  if (!ir::isFloat(dtype)) ctx.unsupported("nanmean into an integer dtype");
  x = castTo(ctx, x, dtype);
  ir::Value* isNumber = emitBinary(ctx, "eq", x, x);
  ir::Value* count = sumOver(ctx, ir::OpKind::ReduceSum, castTo(ctx, isNumber, ir::DType::Int64));
  ir::Value* sum = sumOver(ctx, ir::OpKind::ReduceSum, emitPointwise(ctx, x, "nan_to_zero"));
  ctx.setOutput(0, ctx.emit(ir::OpKind::Div, {sum, castTo(ctx, count, dtype)}));
}

// count_nonzero(self, dim=None or dims): int64 counts of x != 0.
void lowerCountNonzero(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Value* nonzero = emitBinary(ctx, "ne", x, constantFilled(ctx, {x->type().dtype, {}}, 0.0));
  ir::Value* flags = castTo(ctx, nonzero, ir::DType::Int64);
  const int64_t rank = x->type().rank();
  if (rank == 0) return ctx.setOutput(0, flags);
  const std::vector<int64_t> dims = reducedDims(ctx, ctx.argumentIndex("dim"), rank);
  ctx.setOutput(0, ctx.emit(ir::OpKind::ReduceSum, {flags}, {{"dims", dims}, {"keepdim", false}}));
}

// prod(self, dtype=None) over everything, or prod(self, dim, keepdim=False, dtype=None).
void lowerProd(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::DType dtype = widenedDType(ctx, x);
  x = reductionOperand(ctx, x, dtype);
  const ir::Shape shape = x->type().shape;
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  ir::Value* product = x;
  if (shape.empty()) {
    // A single element is its own product.
  } else if (!dimIndex.has_value()) {
    ir::Value* flat = reshape(ctx, x, {x->type().numel()});
    product = reshape(ctx, ctx.emit(ir::OpKind::ReduceProduct, {flat}, {{"dim", int64_t{0}}}), {});
  } else {
    const int64_t dim = normalizedDim(ctx, ctx.toInt(*dimIndex), x->type().rank());
    product = ctx.emit(ir::OpKind::ReduceProduct, {x}, {{"dim", dim}});
    if (!boolArgument(ctx, "keepdim")) {
      ir::Shape reduced = shape;
      reduced.erase(reduced.begin() + dim);
      product = reshape(ctx, product, reduced);
    }
  }
  ctx.setOutput(0, castTo(ctx, product, dtype));
}

// cumsum / cumprod(self, dim, dtype=None): running sums (accumulated as
// PyTorch's CPU kernel: double for floats, int64 for integers) or products.
template <ir::OpKind Kind> void lowerRunning(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), rank);
  const bool sum = Kind == ir::OpKind::CumulativeSum;
  const ir::DType dtype = widenedDType(ctx, x);
  ir::Value* values = reductionOperand(ctx, x, dtype);
  if (sum) {
    values = ctx.emit(Kind, {values}, {{"dim", rank == 0 ? int64_t{0} : dim}, {"reverse", false}});
  } else if (rank > 0) {
    values = ctx.emit(Kind, {values}, {{"dim", dim}});
  }
  ctx.setOutput(0, inPlaceResult(ctx, castTo(ctx, values, dtype)));
}

} // namespace

void registerReductions(LoweringRegistry& registry) {
  registry.add("aten::count_nonzero", lowerCountNonzero);
  registry.add("aten::cumprod", lowerRunning<ir::OpKind::CumulativeProduct>);
  registry.add("aten::cumprod_", lowerRunning<ir::OpKind::CumulativeProduct>);
  registry.add("aten::cumsum", lowerRunning<ir::OpKind::CumulativeSum>);
  registry.add("aten::cumsum_", lowerRunning<ir::OpKind::CumulativeSum>);
  registry.add("aten::mean", lowerMean);
  registry.add("aten::nansum", lowerNansum);
  registry.add("aten::nanmean", lowerNanmean);
  registry.add("aten::prod", lowerProd);
  registry.add("aten::sum", lowerSum);
  registry.add("aten::sum_to_size", lowerSumToSize);
}

} // namespace popsim::frontend::lowerings
