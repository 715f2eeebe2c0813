// Statistics of samples and integrals of sampled functions, written with the
// IR's arithmetic as PyTorch computes them: cov and corrcoef (rows are
// variables, columns observations), trapezoid and cumulative_trapezoid.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>

namespace popsim::frontend::lowerings {
namespace {

// The covariance matrix of x's rows: each row less its mean, times the
// transpose, divided by observations - correction (zero when that is not
// positive, as PyTorch warns and divides by it), size-1 dimensions squeezed
// (one variable gives a 0-d result).
ir::Value* covariance(LoweringContext& ctx, ir::Value* x, double correction) {
  if (x->type().rank() > 2) {
    ctx.unsupported("cov of " + x->type().str() + " (it takes a 1-D or 2-D tensor)");
  }
  if (x->type().rank() < 2) x = reshape(ctx, x, {1, x->type().numel()});
  const int64_t observations = x->type().shape[1];
  ir::Value* sum =
      ctx.emit(ir::OpKind::ReduceSum, {x}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}});
  // The sum divided by the count, as PyTorch divides (not times its reciprocal).
  ir::Value* mean = ctx.emit(
      ir::OpKind::Div,
      {sum, constantFilled(ctx, {sum->type().dtype, {}}, static_cast<double>(observations))});
  ir::Value* centred = ctx.emit(ir::OpKind::Sub, {x, mean});
  ir::Value* products = ctx.emit(ir::OpKind::MatMul, {centred, permute(ctx, centred, {1, 0})});
  const double norm = std::max(static_cast<double>(observations) - correction, 0.0);
  ir::Value* divisor = constantFilled(ctx, {products->type().dtype, {}}, norm);
  ir::Value* c = ctx.emit(ir::OpKind::Div, {products, divisor});
  ir::Shape squeezed;
  for (int64_t n : c->type().shape) {
    if (n != 1) squeezed.push_back(n);
  }
  return reshape(ctx, c, squeezed);
}

// cov(input, correction=1, fweights=None, aweights=None)
void lowerCov(LoweringContext& ctx) {
  if (!ctx.isNone(2) || !ctx.isNone(3)) {
    ctx.unsupported("cov with fweights or aweights (popsim computes unweighted covariances)");
  }
  ctx.setOutput(0, covariance(ctx, floatOperand(ctx, 0), static_cast<double>(ctx.toInt(1))));
}

// corrcoef(input): the covariance divided by the standard deviations of both
// variables, one after the other, and clipped to [-1, 1]; c / c for one.
void lowerCorrcoef(LoweringContext& ctx) {
  ir::Value* c = covariance(ctx, floatOperand(ctx, 0), 1.0);
  if (c->type().rank() == 0) {
    ctx.setOutput(0, ctx.emit(ir::OpKind::Div, {c, c}));
    return;
  }
  const int64_t n = c->type().shape[0];
  // The diagonal: every (n + 1)-th element of the flattened matrix.
  ir::Value* diagonal =
      ctx.emit(ir::OpKind::Slice, {reshape(ctx, c, {n * n})},
               {{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", n * n}, {"step", n + 1}});
  ir::Value* deviation = ctx.emit(ir::OpKind::Sqrt, {diagonal});
  c = ctx.emit(ir::OpKind::Div, {c, reshape(ctx, deviation, {n, 1})});
  c = ctx.emit(ir::OpKind::Div, {c, reshape(ctx, deviation, {1, n})});
  ctx.setOutput(0, emitPointwise(ctx, c, "clamp", {-1.0, 1.0}));
}

// The spacing of the samples along `dim`: the number dx, or the differences
// of the sample points x (1-D, or shaped as y), shaped to broadcast over y's
// neighbour sums.
ir::Value* spacing(LoweringContext& ctx, ir::Value* y, int64_t dim) {
  const int64_t rank = y->type().rank();
  const int64_t size = y->type().shape[static_cast<size_t>(dim)];
  if (!ctx.isTensor(1)) {
    const double dx = ctx.isNone(1) ? 1.0 : ctx.toDouble(1);
    return constantFilled(ctx, {y->type().dtype, {}}, dx);
  }
  ir::Value* x = castTo(ctx, ctx.tensor(1), y->type().dtype);
  if (x->type().rank() == 1 && rank > 1) {
    ir::Shape shape(static_cast<size_t>(rank), 1);
    shape[static_cast<size_t>(dim)] = x->type().numel();
    x = reshape(ctx, x, shape);
  } else if (x->type().shape != y->type().shape) {
    ctx.unsupported("sample points x of " + x->type().str() + " for y of " + y->type().str() +
                    " (popsim takes a 1-D x or one shaped as y)");
  }
  return ctx.emit(ir::OpKind::Sub,
                  {sliceAlong(ctx, x, dim, 1, size), sliceAlong(ctx, x, dim, 0, size - 1)});
}

// The trapezoids' areas along `dim`: spacing * (left + right) / 2, as
// PyTorch's cumulative_trapezoid sums them (and trapezoid with x does).
ir::Value* trapezoids(LoweringContext& ctx, ir::Value* y, int64_t dim) {
  const int64_t size = y->type().shape[static_cast<size_t>(dim)];
  ir::Value* sums = ctx.emit(
      ir::OpKind::Add, {sliceAlong(ctx, y, dim, 0, size - 1), sliceAlong(ctx, y, dim, 1, size)});
  return ctx.emit(ir::OpKind::Mul, {affine(ctx, spacing(ctx, y, dim), 0.5, 0.0), sums});
}

// trapezoid(y, x or dx, dim): with dx, (sum(y) - (first + last) / 2) * dx, as
// PyTorch computes it; with x, the sum of the trapezoids.
void lowerTrapezoid(LoweringContext& ctx) {
  ir::Value* y = floatOperand(ctx, 0);
  if (y->type().rank() == 0) ctx.unsupported("trapezoid of a 0-d tensor");
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), y->type().rank());
  const int64_t size = y->type().shape[static_cast<size_t>(dim)];
  if (size == 0) ctx.unsupported("trapezoid along a dimension of size 0");
  const std::vector<int64_t> dims = {dim};
  if (ctx.isTensor(1)) {
    ir::Value* areas = trapezoids(ctx, y, dim);
    ctx.setOutput(0,
                  ctx.emit(ir::OpKind::ReduceSum, {areas}, {{"dims", dims}, {"keepdim", false}}));
    return;
  }
  ir::Value* total = ctx.emit(ir::OpKind::ReduceSum, {y}, {{"dims", dims}, {"keepdim", true}});
  ir::Value* ends = ctx.emit(
      ir::OpKind::Add, {sliceAlong(ctx, y, dim, 0, 1), sliceAlong(ctx, y, dim, size - 1, size)});
  ir::Value* area = ctx.emit(ir::OpKind::Sub, {total, affine(ctx, ends, 0.5, 0.0)});
  area = ctx.emit(ir::OpKind::Mul, {area, spacing(ctx, y, dim)});
  ir::Shape shape = y->type().shape;
  shape.erase(shape.begin() + dim);
  ctx.setOutput(0, reshape(ctx, area, shape));
}

// cumulative_trapezoid(y, x or dx, dim): the running sum of the trapezoids.
void lowerCumulativeTrapezoid(LoweringContext& ctx) {
  ir::Value* y = floatOperand(ctx, 0);
  if (y->type().rank() == 0) ctx.unsupported("cumulative_trapezoid of a 0-d tensor");
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), y->type().rank());
  if (y->type().shape[static_cast<size_t>(dim)] == 0) {
    ctx.unsupported("cumulative_trapezoid along a dimension of size 0");
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::CumulativeSum, {trapezoids(ctx, y, dim)},
                            {{"dim", dim}, {"reverse", false}}));
}

} // namespace

void registerStatistics(LoweringRegistry& registry) {
  registry.add("aten::cov", lowerCov);
  registry.add("aten::corrcoef", lowerCorrcoef);
  registry.add("aten::trapezoid", lowerTrapezoid);
  registry.add("aten::trapz", lowerTrapezoid);
  registry.add("aten::cumulative_trapezoid", lowerCumulativeTrapezoid);
}

} // namespace popsim::frontend::lowerings
