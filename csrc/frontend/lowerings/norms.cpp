// Vector norms: norm, frobenius_norm, linalg_vector_norm and linalg_norm of
// vectors (over any dims), as sums and extrema with PyTorch's gradients
// (zero for a zero vector; shared between equal largest magnitudes).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace popsim::frontend::lowerings {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::vector<int64_t> normDims(const LoweringContext& ctx, std::optional<size_t> index,
                              int64_t rank) {
  std::vector<int64_t> dims;
  if (index.has_value() && !ctx.isNone(*index)) {
    for (int64_t dim : ctx.toIntList(*index))
      dims.push_back(normalizedDim(ctx, dim, rank));
  }
  if (dims.empty()) {
    dims.resize(static_cast<size_t>(std::max<int64_t>(rank, 1)));
    std::iota(dims.begin(), dims.end(), 0);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

ir::Value* sumOver(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& dims,
                   bool keepdim) {
  return ctx.emit(ir::OpKind::ReduceSum, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}

double orderArgument(LoweringContext& ctx, std::optional<size_t> index, double fallback) {
  if (!index.has_value() || ctx.isNone(*index)) return fallback;
  return ctx.toDouble(*index);
}

bool keepdimOf(LoweringContext& ctx) {
  const std::optional<size_t> index = ctx.argumentIndex("keepdim");
  return index.has_value() && !ctx.isNone(*index) && ctx.toBool(*index);
}

// norm(self, p=2) and norm(self, p, dim, keepdim); frobenius_norm(self[, dim, keepdim]).
template <bool Frobenius> void lowerNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const double p = Frobenius ? 2.0 : orderArgument(ctx, ctx.argumentIndex("p"), 2.0);
  const auto dims = normDims(ctx, ctx.argumentIndex("dim"), x->type().rank());
  ctx.setOutput(0, vectorNormOver(ctx, x, p, dims, keepdimOf(ctx)));
}

// linalg_vector_norm(self, ord=2, dim=None, keepdim=False).
void lowerVectorNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const double p = orderArgument(ctx, ctx.argumentIndex("ord"), 2.0);
  ctx.setOutput(0,
                vectorNormOver(ctx, x, p, normDims(ctx, ctx.argumentIndex("dim"), x->type().rank()),
                               keepdimOf(ctx)));
}

// linalg_norm(self, ord=None, dim=None, keepdim=False): the 2-norm of the
// flattened tensor (Frobenius for matrices) without ord, a vector norm with
// ord over one dim or a 1-D tensor; matrix norms with ord are refused.
void lowerLinalgNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const std::optional<size_t> ordIndex = ctx.argumentIndex("ord");
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  const bool hasOrd = ordIndex.has_value() && !ctx.isNone(*ordIndex);
  const auto dims = normDims(ctx, dimIndex, rank);
  if (hasOrd && (ctx.isString(*ordIndex) || dims.size() == 2)) {
    ctx.unsupported("matrix norms (linalg.norm with ord over two dimensions); vector norms "
                    "(torch.linalg.vector_norm) and the Frobenius norm are supported");
  }
  const double p = hasOrd ? ctx.toDouble(*ordIndex) : 2.0;
  ctx.setOutput(0, vectorNormOver(ctx, x, p, dims, keepdimOf(ctx)));
}

} // namespace

// The p-norm of x over dims: sum(|x| ** p) ** (1 / p) for p >= 1 (the root
// with a zero gradient at a zero vector), the largest (smallest) magnitude
// for inf (-inf), the count of non-zeros for 0.
ir::Value* vectorNormOver(LoweringContext& ctx, ir::Value* x, double p, std::vector<int64_t> dims,
                          bool keepdim) {
  const ir::Shape shape = x->type().shape;
  if (shape.empty()) {
    x = reshape(ctx, x, {1});
    dims = {0};
  }
  ir::Value* y = nullptr;
  if (std::isinf(p)) {
    ir::Value* magnitude = ctx.emit(ir::OpKind::Abs, {x});
    y = reduceExtremum(ctx, magnitude, dims, keepdim, p > 0, "split_nan");
  } else if (p == 0.0) {
    ir::Value* nonzero =
        emitBinary(ctx, "ne", x, constantFilled(ctx, {ir::DType::Float32, {}}, 0.0));
    y = sumOver(ctx, castTo(ctx, nonzero, ir::DType::Float32), dims, keepdim);
  } else if (p == 1.0) {
    y = sumOver(ctx, ctx.emit(ir::OpKind::Abs, {x}), dims, keepdim);
  } else if (p > 1.0) {
    ir::Value* base = p == 2.0 ? x : ctx.emit(ir::OpKind::Abs, {x});
    ir::Value* powers = emitPointwise(ctx, base, "pow", {p});
    y = emitPointwise(ctx, sumOver(ctx, powers, dims, keepdim), "norm_root", {1.0 / p});
  } else {
    ctx.unsupported("a p-norm with p = " + std::to_string(p) +
                    " (popsim takes p = 0, p >= 1, inf and -inf)");
  }
  return shape.empty() ? reshape(ctx, y, {}) : y;
}

void registerNorms(LoweringRegistry& registry) {
  registry.add("aten::norm", lowerNorm<false>);
  registry.add("aten::frobenius_norm", lowerNorm<true>);
  registry.add("aten::linalg_vector_norm", lowerVectorNorm);
  registry.add("aten::linalg_norm", lowerLinalgNorm);
}

} // namespace popsim::frontend::lowerings
