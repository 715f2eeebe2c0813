// Statistics of samples, and integrals and derivatives of sampled functions,
// written with the IR's arithmetic as PyTorch computes them: cov and corrcoef
// (rows are variables, columns observations), histc, trapezoid,
// cumulative_trapezoid and gradient.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <limits>

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

ir::Value* neg(LoweringContext& ctx, ir::Value* a) { return emitPointwise(ctx, a, "neg"); }

// a * x + b * y + c * z, summed left to right.
ir::Value* weighted(LoweringContext& ctx, ir::Value* a, ir::Value* x, ir::Value* b, ir::Value* y,
                    ir::Value* c, ir::Value* z) {
  return add(ctx, add(ctx, mul(ctx, a, x), mul(ctx, b, y)), mul(ctx, c, z));
}

// One dimension of gradient with sample coordinates (a 1-D tensor as long as
// the dimension): the second-order accurate difference of unequal steps
// inside, first- or second-order one-sided differences at the ends, their
// weights formed from the steps' sums and products as PyTorch forms them.
ir::Value* gradientAlong(LoweringContext& ctx, ir::Value* f, int64_t dim, ir::Value* coordinates,
                         int64_t edgeOrder) {
  const int64_t size = f->type().shape[static_cast<size_t>(dim)];
  ir::Value* steps = sub(ctx, sliceAlong(ctx, coordinates, 0, 1, size),
                         sliceAlong(ctx, coordinates, 0, 0, size - 1));
  ir::Shape along(static_cast<size_t>(f->type().rank()), 1);
  along[static_cast<size_t>(dim)] = size - 2;
  ir::Value* dx1 = sliceAlong(ctx, steps, 0, 0, size - 2);
  ir::Value* dx2 = sliceAlong(ctx, steps, 0, 1, size - 1);
  ir::Value* a = reshape(ctx, div(ctx, neg(ctx, dx2), mul(ctx, dx1, add(ctx, dx1, dx2))), along);
  ir::Value* b = reshape(ctx, div(ctx, sub(ctx, dx2, dx1), mul(ctx, dx1, dx2)), along);
  ir::Value* c = reshape(ctx, div(ctx, dx1, mul(ctx, dx2, add(ctx, dx1, dx2))), along);
  const auto at = [&](int64_t start, int64_t end) { return sliceAlong(ctx, f, dim, start, end); };
  const auto step = [&](int64_t i) {
    return reshape(ctx, sliceAlong(ctx, steps, 0, i, i + 1), {});
  };
  ir::Value* center = weighted(ctx, a, at(0, size - 2), b, at(1, size - 1), c, at(2, size));
  ir::Value* first = nullptr;
  ir::Value* last = nullptr;
  ir::Value* d0 = step(0);
  ir::Value* dn = step(size - 2);
  if (edgeOrder == 1) {
    first = div(ctx, sub(ctx, at(1, 2), at(0, 1)), d0);
    last = div(ctx, sub(ctx, at(size - 1, size), at(size - 2, size - 1)), dn);
  } else {
    ir::Value* d1 = step(1);
    ir::Value* d0d1 = add(ctx, d0, d1);
    first = weighted(
        ctx, div(ctx, neg(ctx, add(ctx, affine(ctx, d0, 2.0, 0.0), d1)), mul(ctx, d0, d0d1)),
        at(0, 1), div(ctx, d0d1, mul(ctx, d0, d1)), at(1, 2),
        div(ctx, neg(ctx, d0), mul(ctx, d1, d0d1)), at(2, 3));
    ir::Value* dm = step(size - 3);
    ir::Value* dndm = add(ctx, dn, dm);
    last = weighted(ctx, div(ctx, dn, mul(ctx, dm, dndm)), at(size - 3, size - 2),
                    div(ctx, neg(ctx, dndm), mul(ctx, dn, dm)), at(size - 2, size - 1),
                    div(ctx, add(ctx, affine(ctx, dn, 2.0, 0.0), dm), mul(ctx, dn, dndm)),
                    at(size - 1, size));
  }
  return ctx.emit(ir::OpKind::Concat, {first, center, last}, {{"dim", dim}});
}

// One dimension of gradient with a number spacing h: (f[i+1] - f[i-1]) / h / 2
// inside, first- or second-order one-sided differences over h at the ends.
ir::Value* gradientAlong(LoweringContext& ctx, ir::Value* f, int64_t dim, double h,
                         int64_t edgeOrder) {
  const int64_t size = f->type().shape[static_cast<size_t>(dim)];
  const auto at = [&](int64_t start, int64_t end) { return sliceAlong(ctx, f, dim, start, end); };
  ir::Value* center =
      divideByNumber(ctx, divideByNumber(ctx, sub(ctx, at(2, size), at(0, size - 2)), h), 2.0);
  ir::Value* first = nullptr;
  ir::Value* last = nullptr;
  if (edgeOrder == 1) {
    first = sub(ctx, at(1, 2), at(0, 1));
    last = sub(ctx, at(size - 1, size), at(size - 2, size - 1));
  } else {
    first = sub(ctx, add(ctx, affine(ctx, at(0, 1), -1.5, 0.0), affine(ctx, at(1, 2), 2.0, 0.0)),
                affine(ctx, at(2, 3), 0.5, 0.0));
    last = add(ctx,
               sub(ctx, affine(ctx, at(size - 3, size - 2), 0.5, 0.0),
                   affine(ctx, at(size - 2, size - 1), 2.0, 0.0)),
               affine(ctx, at(size - 1, size), 1.5, 0.0));
  }
  return ctx.emit(ir::OpKind::Concat,
                  {divideByNumber(ctx, first, h), center, divideByNumber(ctx, last, h)},
                  {{"dim", dim}});
}

// gradient(self, spacing, dim, edge_order): a list with the derivative along
// each of `dim` (every dimension when None), estimated by differences as
// PyTorch's torch.gradient does. spacing is None (1), a number, a number per
// dimension, or a 1-D coordinates tensor per dimension.
void lowerGradient(LoweringContext& ctx) {
  ir::Value* f = floatOperand(ctx, 0);
  const int64_t rank = f->type().rank();
  const size_t spacingIndex = *ctx.argumentIndex("spacing");
  const size_t dimIndex = *ctx.argumentIndex("dim");
  const int64_t edgeOrder = ctx.toInt(*ctx.argumentIndex("edge_order"));
  if (edgeOrder != 1 && edgeOrder != 2) {
    ctx.unsupported("torch.gradient with edge_order=" + std::to_string(edgeOrder) +
                    " (PyTorch takes 1 or 2)");
  }
  std::vector<int64_t> dims;
  if (ctx.isNone(dimIndex)) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  } else if (const std::optional<double> single = ctx.staticScalar(dimIndex)) {
    dims.push_back(static_cast<int64_t>(*single));
  } else {
    dims = ctx.toIntList(dimIndex);
  }
  for (int64_t& d : dims)
    d = normalizedDim(ctx, d, rank);
  std::vector<double> steps;
  std::vector<ir::Value*> coordinates;
  if (ctx.isNone(spacingIndex)) {
    steps.assign(dims.size(), 1.0);
  } else if (ctx.isTensorList(spacingIndex)) {
    coordinates = ctx.tensorList(spacingIndex);
  } else if (const std::optional<double> h = ctx.staticScalar(spacingIndex)) {
    steps.assign(dims.size(), *h);
  } else {
    steps = ctx.toDoubleList(spacingIndex);
  }
  const size_t given = coordinates.empty() ? steps.size() : coordinates.size();
  if (given != dims.size()) {
    ctx.unsupported("torch.gradient with " + std::to_string(given) + " spacings for " +
                    std::to_string(dims.size()) +
                    " dimensions (it takes one spacing, or one per dimension)");
  }
  std::vector<ir::Value*> derivatives;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t size = f->type().shape[static_cast<size_t>(dims[i])];
    if (size < edgeOrder + 1) {
      ctx.unsupported("torch.gradient along dimension " + std::to_string(dims[i]) + " of size " +
                      std::to_string(size) + " with edge_order=" + std::to_string(edgeOrder) +
                      " (each dimension needs at least edge_order + 1 samples)");
    }
    if (coordinates.empty()) {
      derivatives.push_back(gradientAlong(ctx, f, dims[i], steps[i], edgeOrder));
      continue;
    }
    ir::Value* x = coordinates[i];
    if (x->type().rank() != 1 || x->type().numel() != size) {
      ctx.unsupported("torch.gradient with coordinates of " + x->type().str() + " for dimension " +
                      std::to_string(dims[i]) + " of size " + std::to_string(size) +
                      " (each is a 1-D tensor of the dimension's size)");
    }
    derivatives.push_back(
        gradientAlong(ctx, f, dims[i], castTo(ctx, x, f->type().dtype), edgeOrder));
  }
  ctx.setOutputList(0, derivatives);
}

// histc(self, bins=100, min=0, max=0): counts of the elements in `bins`
// equal bins between min and max (both included), in the input's dtype; with
// min == max, between the input's smallest and largest values (widened by 1
// each way when those are equal too). An element's bin is PyTorch's linear
// interpolation, in float32: trunc((x - min) / (max - min) * bins), the last
// bin taking max. Elements outside the range are not counted, NaN neither.
// Two places where PyTorch 1.13's kernel differs, and popsim follows the
// documented definition: 1.13 counts NaN in the first bin, and reads max back
// from linspace(min, max, bins + 1), whose last value its vectorised loop
// computes as min + bins * step when bins + 1 is a multiple of the CPU's
// vector width, so an element equal to max can fall outside and go uncounted.
void lowerHistc(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::DType dtype = x->type().dtype;
  if (!ir::isFloat(dtype)) {
    ctx.unsupported("histc of a " + x->type().str() +
                    " tensor (PyTorch counts float tensors; convert it with .float())");
  }
  const int64_t bins = ctx.toInt(1);
  const double low = ctx.toDouble(2);
  const double high = ctx.toDouble(3);
  const int64_t count = x->type().numel();
  if (count == 0) {
    ctx.setOutput(0, constantFilled(ctx, {dtype, {bins}}, 0.0));
    return;
  }
  // As eager under PopTorch's float16: positions in float32, counts rounded to float16.
  x = castTo(ctx, reshape(ctx, x, {count}), ir::DType::Float32);
  ir::Value* lowest = nullptr;
  ir::Value* highest = nullptr;
  if (low != high) {
    lowest = floatScalar(ctx, static_cast<float>(low));
    highest = floatScalar(ctx, static_cast<float>(high));
  } else {
    // Eager refuses a range that is not finite: a NaN or an infinity among
    // the elements. The check names the first.
    x = ctx.emit(ir::OpKind::CheckRange, {x},
                 {{"min", -static_cast<double>(std::numeric_limits<float>::max())},
                  {"max", static_cast<double>(std::numeric_limits<float>::max())},
                  {"what", std::string("histc with min == max (the default) counts between the "
                                       "input's smallest and largest values, so every element "
                                       "must be finite; pass min and max to count the finite "
                                       "elements between them")}});
    lowest = reduceExtremum(ctx, x, {0}, false, false, "split");
    highest = reduceExtremum(ctx, x, {0}, false, true, "split");
    ir::Value* same = emitBinary(ctx, "eq", lowest, highest);
    lowest = ctx.emit(ir::OpKind::Where, {same, affine(ctx, lowest, 1.0, -1.0), lowest});
    highest = ctx.emit(ir::OpKind::Where, {same, affine(ctx, highest, 1.0, 1.0), highest});
  }
  // In range (NaN is not): the elements counted.
  ir::Value* counted = emitBinary(ctx, "logical_and", emitBinary(ctx, "ge", x, lowest),
                                  emitBinary(ctx, "le", x, highest));
  ir::Value* position = mul(ctx, div(ctx, sub(ctx, x, lowest), sub(ctx, highest, lowest)),
                            floatScalar(ctx, static_cast<float>(bins)));
  // Elements not counted go to bin 0 with weight 0 (and are never converted
  // from NaN or an infinity); max itself goes to the last bin.
  position = ctx.emit(ir::OpKind::Where, {counted, position, floatScalar(ctx, 0.0f)});
  ir::Value* bin =
      emitBinary(ctx, "minimum", castTo(ctx, position, ir::DType::Int64),
                 constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(bins - 1)));
  ir::Value* counts = ctx.emit(ir::OpKind::IndexAdd,
                               {constantFilled(ctx, {ir::DType::Float32, {bins}}, 0.0), bin,
                                castTo(ctx, counted, ir::DType::Float32)},
                               {{"dim", int64_t{0}}, {"accumulate", true}});
  // Counts are constants to autograd: PyTorch marks histc's result not differentiable.
  ctx.setOutput(0, ctx.emit(ir::OpKind::StopGradient, {castTo(ctx, counts, dtype)}));
}

} // namespace

void registerStatistics(LoweringRegistry& registry) {
  registry.add("aten::histc", lowerHistc);
  registry.add("aten::cov", lowerCov);
  registry.add("aten::corrcoef", lowerCorrcoef);
  registry.add("aten::trapezoid", lowerTrapezoid);
  registry.add("aten::trapz", lowerTrapezoid);
  registry.add("aten::cumulative_trapezoid", lowerCumulativeTrapezoid);
  registry.add("aten::gradient", lowerGradient);
}

} // namespace popsim::frontend::lowerings
