// Vector norms (norm, frobenius_norm, linalg_vector_norm and linalg_norm of
// vectors, over any dims, and dist, the norm of a difference) and matrix
// norms (linalg_norm and linalg_matrix_norm: Frobenius, 1, -1, inf, -inf), as
// sums and extrema with PyTorch's gradients (zero for a zero vector; shared
// between equal largest magnitudes); linalg.vecdot.

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

// norm(self, p=2) and norm(self, p, dim, keepdim); frobenius_norm(self[, dim, keepdim]).
template <bool Frobenius> void lowerNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const double p = Frobenius ? 2.0 : orderArgument(ctx, ctx.argumentIndex("p"), 2.0);
  const auto dims = normDims(ctx, ctx.argumentIndex("dim"), x->type().rank());
  ctx.setOutput(0, vectorNormOver(ctx, x, p, dims, boolArgument(ctx, "keepdim")));
}

// linalg_vector_norm(self, ord=2, dim=None, keepdim=False).
void lowerVectorNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const double p = orderArgument(ctx, ctx.argumentIndex("ord"), 2.0);
  ctx.setOutput(0,
                vectorNormOver(ctx, x, p, normDims(ctx, ctx.argumentIndex("dim"), x->type().rank()),
                               boolArgument(ctx, "keepdim")));
}

// The two dims of a matrix norm in the order given (default the last two).
std::pair<int64_t, int64_t> matrixDims(LoweringContext& ctx, std::optional<size_t> index,
                                       int64_t rank) {
  std::vector<int64_t> dims = {-2, -1};
  if (index.has_value() && !ctx.isNone(*index)) dims = ctx.toIntList(*index);
  if (dims.size() != 2 || rank < 2) {
    ctx.unsupported("a matrix norm over " + std::to_string(dims.size()) +
                    " dims of a tensor of rank " + std::to_string(rank) +
                    "; it takes two dims of a tensor of rank 2 or more");
  }
  const int64_t first = normalizedDim(ctx, dims[0], rank);
  const int64_t second = normalizedDim(ctx, dims[1], rank);
  if (first == second) ctx.unsupported("a matrix norm over the same dim twice");
  return {first, second};
}

// Matrix norms as PyTorch computes them: Frobenius ("fro") the 2-norm of the
// elements; ord 1 (-1) the largest (smallest) sum of magnitudes over the
// first dim, inf (-inf) over the second. The spectral (2) and nuclear norms
// need singular values, which popsim does not compute.
ir::Value* matrixNorm(LoweringContext& ctx, ir::Value* x, const std::string& ord,
                      std::pair<int64_t, int64_t> dims, bool keepdim) {
  std::vector<int64_t> both = {dims.first, dims.second};
  std::sort(both.begin(), both.end());
  if (ord == "fro") return vectorNormOver(ctx, x, 2.0, both, keepdim);
  const bool supported = ord == "1" || ord == "-1" || ord == "inf" || ord == "-inf";
  if (!supported) {
    ctx.unsupported("the matrix norm of order " + ord +
                    " (spectral and nuclear norms need singular values); orders 'fro', 1, -1, "
                    "inf and -inf are supported");
  }
  int64_t summed = dims.first;
  int64_t extremum = dims.second;
  if (ord == "inf" || ord == "-inf") std::swap(summed, extremum); // rows instead of columns
  ir::Value* sums = vectorNormOver(ctx, x, 1.0, {summed}, keepdim);
  if (!keepdim && summed < extremum) --extremum;
  return reduceExtremum(ctx, sums, {extremum}, keepdim, ord[0] != '-', "split");
}

// The order argument of a matrix norm as text: "fro", "nuc", "1", "inf", ...
std::string matrixOrder(LoweringContext& ctx, size_t index) {
  if (ctx.isString(index)) return ctx.toString(index);
  const double p = ctx.toDouble(index);
  if (std::isinf(p)) return p > 0 ? "inf" : "-inf";
  return p == std::trunc(p) ? std::to_string(static_cast<int64_t>(p)) : std::to_string(p);
}

// linalg_norm(self, ord=None, dim=None, keepdim=False): the 2-norm of the
// flattened tensor (Frobenius for matrices) without ord, a vector norm with
// ord over one dim or of a 1-D tensor, a matrix norm with ord over two dims
// (or of a 2-D tensor).
void lowerLinalgNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const std::optional<size_t> ordIndex = ctx.argumentIndex("ord");
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  const bool hasOrd = ordIndex.has_value() && !ctx.isNone(*ordIndex);
  const auto dims = normDims(ctx, dimIndex, rank);
  if (hasOrd && (ctx.isString(*ordIndex) || dims.size() == 2)) {
    ctx.setOutput(0, matrixNorm(ctx, x, matrixOrder(ctx, *ordIndex),
                                matrixDims(ctx, dimIndex, rank), boolArgument(ctx, "keepdim")));
    return;
  }
  const double p = hasOrd ? ctx.toDouble(*ordIndex) : 2.0;
  ctx.setOutput(0, vectorNormOver(ctx, x, p, dims, boolArgument(ctx, "keepdim")));
}

// linalg_matrix_norm(self, ord="fro", dim=(-2, -1), keepdim=False).
void lowerMatrixNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const std::optional<size_t> ordIndex = ctx.argumentIndex("ord");
  const std::string ord =
      ordIndex.has_value() && !ctx.isNone(*ordIndex) ? matrixOrder(ctx, *ordIndex) : "fro";
  ctx.setOutput(0,
                matrixNorm(ctx, x, ord, matrixDims(ctx, ctx.argumentIndex("dim"), x->type().rank()),
                           boolArgument(ctx, "keepdim")));
}

// aten::_weight_norm(v, g, dim=0), as nn.utils.weight_norm recomputes a
// weight before each forward(): v * g / ||v||, the 2-norm over every
// dimension but dim (over all of them for dim -1, as PyTorch's
// norm_except_dim), g holding one factor per slice along dim.
void lowerWeightNorm(LoweringContext& ctx) {
  ir::Value* v = floatTensor(ctx, 0);
  ir::Value* g = floatTensor(ctx, 1);
  const int64_t rank = v->type().rank();
  int64_t dim = ctx.numInputs() > 2 ? ctx.toInt(2) : 0;
  if (dim < -1) dim += rank;
  if (dim >= rank || dim < -1) {
    ctx.unsupported("weight norm along dimension " + std::to_string(dim) + " of a tensor with " +
                    std::to_string(rank) + " dimensions");
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (dim == -1 || d != dim) dims.push_back(d);
  }
  ir::Value* norm = vectorNormOver(ctx, v, 2.0, dims, /*keepdim=*/true);
  ir::Value* scale = ctx.emit(ir::OpKind::Div, {reshape(ctx, g, norm->type().shape), norm});
  ctx.setOutput(0, ctx.emit(ir::OpKind::Mul, {v, broadcastTo(ctx, scale, v->type().shape)}));
}

} // namespace

// The p-norm of x over dims: sum(|x| ** p) ** (1 / p) for p other than 0
// and +-inf (the root with a zero gradient at a zero vector, and for p < 1
// each magnitude's power with a zero gradient at 0), the largest (smallest)
// magnitude for inf (-inf), the count of non-zeros for 0.
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
    ir::Value* nonzero = emitBinary(ctx, "ne", x, floatScalar(ctx, 0.0));
    y = sumOver(ctx, castTo(ctx, nonzero, ir::DType::Float32), dims, keepdim);
  } else if (p == 1.0) {
    y = sumOver(ctx, ctx.emit(ir::OpKind::Abs, {x}), dims, keepdim);
  } else if (p > 1.0) {
    ir::Value* base = p == 2.0 ? x : ctx.emit(ir::OpKind::Abs, {x});
    ir::Value* powers = emitPointwise(ctx, base, "pow", {p});
    y = emitPointwise(ctx, sumOver(ctx, powers, dims, keepdim), "norm_root", {1.0 / p});
  } else { // p < 1: the magnitudes' powers, with a zero gradient at 0
    ir::Value* powers = emitPointwise(ctx, x, "magnitude_pow", {p});
    y = emitPointwise(ctx, sumOver(ctx, powers, dims, keepdim), "norm_root", {1.0 / p});
  }
  return shape.empty() ? reshape(ctx, y, {}) : y;
}

// renorm(self, p, dim, maxnorm): each slice along dim whose p-norm exceeds
// maxnorm scaled by maxnorm / (norm + 1e-7), as PyTorch scales it.
void lowerRenorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const double p = ctx.toDouble(1);
  const int64_t rank = x->type().rank();
  if (rank < 2) {
    ctx.unsupported("renorm of " + x->type().str() +
                    ": it needs at least 2 dimensions (PyTorch raises here too)");
  }
  if (p <= 0.0) ctx.unsupported("renorm with p=" + std::to_string(p) + " (p must be positive)");
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), rank);
  const double maxnorm = ctx.toDouble(3);
  std::vector<int64_t> others;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) others.push_back(d);
  // Whether a slice is scaled comes from its norm without a gradient, as in
  // PyTorch's backward, which passes the gradient through unscaled slices
  // untouched: a slice holding a NaN (whose norm is NaN, so not scaled) then
  // takes its norm's gradient from zeros, not from its NaN.
  ir::Value* decided =
      ctx.emit(ir::OpKind::StopGradient, {vectorNormOver(ctx, x, p, others, true)});
  const ir::DType dtype = decided->type().dtype;
  ir::Value* zero = constantFilled(ctx, {x->type().dtype, {}}, 0.0);
  ir::Value* withoutNaN =
      ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "ne", decided, decided), zero, x});
  ir::Value* norm = vectorNormOver(ctx, withoutNaN, p, others, true);
  ir::Value* over = emitBinary(ctx, "gt", decided, constantFilled(ctx, {dtype, {}}, maxnorm));
  ir::Value* scale = ctx.emit(
      ir::OpKind::Div, {constantFilled(ctx, {dtype, {}}, maxnorm), affine(ctx, norm, 1.0, 1e-7)});
  ir::Value* factor =
      ctx.emit(ir::OpKind::Where, {over, scale, constantFilled(ctx, {dtype, {}}, 1.0)});
  ctx.setOutput(0, inPlaceResult(ctx, ctx.emit(ir::OpKind::Mul, {x, factor})));
}

// dist(self, other, p=2): the p-norm of all of self - other, the two
// broadcast against each other.
void lowerDist(LoweringContext& ctx) {
  ir::DType dtype = promotedDType(ctx, {0, 1});
  if (!ir::isFloat(dtype))
    ctx.unsupported("dist of " + std::string(ir::dtypeName(dtype)) +
                    " tensors (it takes floating-point tensors)");
  ir::Value* difference = sub(ctx, operandAs(ctx, 0, dtype), operandAs(ctx, 1, dtype));
  const double p = orderArgument(ctx, ctx.argumentIndex("p"), 2.0);
  ctx.setOutput(0, vectorNormOver(ctx, difference, p,
                                  normDims(ctx, std::nullopt, difference->type().rank()), false));
}

// linalg_vecdot(x, y, *, dim=-1): the sum of x * y along dim, the two
// broadcast against each other (the conjugate of a real x is itself).
void lowerVecdot(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* product = mul(ctx, operandAs(ctx, 0, dtype), operandAs(ctx, 1, dtype));
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), product->type().rank());
  ctx.setOutput(0, sumOver(ctx, product, {dim}, false));
}

void registerNorms(LoweringRegistry& registry) {
  registry.add("aten::renorm", lowerRenorm);
  registry.add("aten::renorm_", lowerRenorm);
  registry.add("aten::norm", lowerNorm<false>);
  registry.add("aten::frobenius_norm", lowerNorm<true>);
  registry.add("aten::linalg_vector_norm", lowerVectorNorm);
  registry.add("aten::linalg_norm", lowerLinalgNorm);
  registry.add("aten::linalg_matrix_norm", lowerMatrixNorm);
  registry.add("aten::_weight_norm", lowerWeightNorm);
  registry.add("aten::dist", lowerDist);
  registry.add("aten::linalg_vecdot", lowerVecdot);
}

} // namespace popsim::frontend::lowerings
