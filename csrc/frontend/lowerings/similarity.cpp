// Similarities and distances between vectors: cosine_similarity,
// cosine_embedding_loss and cdist, each as PyTorch's CPU implementation
// computes it (so values and gradients round alike), from IR ops.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cmath>

namespace popsim::frontend::lowerings {
namespace {

ir::Value* sumAlong(LoweringContext& ctx, ir::Value* x, int64_t dim, bool keepdim) {
  return ctx.emit(ir::OpKind::ReduceSum, {x},
                  {{"dims", std::vector<int64_t>{dim}}, {"keepdim", keepdim}});
}

ir::Value* squares(LoweringContext& ctx, ir::Value* x) { return ctx.emit(ir::OpKind::Mul, {x, x}); }

// cosine_similarity(x1, x2, dim=1, eps=1e-8): both broadcast to one shape,
// each divided by its norm along dim (the sum of squares floored at eps^2,
// with the gradient passing the floor, as PyTorch floors it outside autograd),
// and the products summed along dim.
void lowerCosineSimilarity(LoweringContext& ctx) {
  ir::Value* x1 = floatTensor(ctx, 0);
  ir::Value* x2 = floatTensor(ctx, 1);
  const std::optional<ir::Shape> shape = ir::broadcastShapes(x1->type().shape, x2->type().shape);
  if (!shape.has_value()) {
    ctx.unsupported("x1 " + x1->type().str() + " and x2 " + x2->type().str() +
                    " do not broadcast to one shape");
  }
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), static_cast<int64_t>(shape->size()));
  const double eps = ctx.toDouble(3);
  ir::Value* product = nullptr;
  for (ir::Value* x : {broadcastTo(ctx, x1, *shape), broadcastTo(ctx, x2, *shape)}) {
    ir::Value* norm = emitPointwise(ctx, sumAlong(ctx, squares(ctx, x), dim, true),
                                    "root_of_floored", {eps * eps});
    ir::Value* unit = ctx.emit(ir::OpKind::Div, {x, norm});
    product = product == nullptr ? unit : ctx.emit(ir::OpKind::Mul, {product, unit});
  }
  ctx.setOutput(0, sumAlong(ctx, product, dim, false));
}

// cosine_embedding_loss(x1, x2, target, margin, reduction): with
// cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12)(sum(x2^2) + 1e-12)) over the
// last dimension, 1 - cos where target is 1, max(cos - margin, 0) where it is -1.
void lowerCosineEmbeddingLoss(LoweringContext& ctx) {
  ir::Value* x1 = floatTensor(ctx, 0);
  ir::Value* x2 = floatTensor(ctx, 1);
  ir::Value* target = ctx.tensor(2);
  const int64_t dim = target->type().rank();
  if (dim > 1 || x1->type().rank() != dim + 1 || x2->type().rank() != dim + 1) {
    ctx.unsupported("inputs " + x1->type().str() + " and " + x2->type().str() + " with target " +
                    target->type().str() +
                    ": cosine_embedding_loss takes [N, D] inputs with an [N] target, or [D] "
                    "inputs with a 0-d target");
  }
  constexpr double kEpsilon = 1e-12; // PyTorch's, added to each squared magnitude
  ir::Value* dot = sumAlong(ctx, ctx.emit(ir::OpKind::Mul, {x1, x2}), dim, false);
  ir::Value* magnitudes = ctx.emit(
      ir::OpKind::Mul, {affine(ctx, sumAlong(ctx, squares(ctx, x1), dim, false), 1.0, kEpsilon),
                        affine(ctx, sumAlong(ctx, squares(ctx, x2), dim, false), 1.0, kEpsilon)});
  ir::Value* cos = ctx.emit(ir::OpKind::Div, {dot, ctx.emit(ir::OpKind::Sqrt, {magnitudes})});
  const double margin = ctx.toDouble(3);
  ir::Value* zero = floatScalar(ctx, 0.0);
  ir::Value* labels = castTo(ctx, target, ir::DType::Float32);
  ir::Value* similar =
      ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "eq", labels, floatScalar(ctx, 1.0)),
                                   affine(ctx, cos, -1.0, 1.0), zero});
  ir::Value* dissimilar = ctx.emit(
      ir::OpKind::Where,
      {emitBinary(ctx, "eq", labels, floatScalar(ctx, -1.0)),
       emitPointwise(ctx, affine(ctx, cos, 1.0, -margin), "clamp", {0.0, INFINITY}), zero});
  setLoss(ctx,
          reduceLoss(ctx, ctx.emit(ir::OpKind::Add, {similar, dissimilar}), lossReduction(ctx, 4)));
}

ir::Value* unsqueezed(LoweringContext& ctx, ir::Value* x, int64_t fromEnd) {
  ir::Shape shape = x->type().shape;
  shape.insert(shape.end() - fromEnd, 1);
  return reshape(ctx, x, shape);
}

ir::Value* lastTwoSwapped(LoweringContext& ctx, ir::Value* x) {
  std::vector<int64_t> perm;
  const int64_t rank = x->type().rank();
  for (int64_t d = 0; d < rank; ++d)
    perm.push_back(d);
  std::swap(perm[static_cast<size_t>(rank - 2)], perm[static_cast<size_t>(rank - 1)]);
  return permute(ctx, x, perm);
}

// PyTorch's Euclidean distances through a matrix product (cdist with p = 2
// for more than 25 rows, or compute_mode 1): [-2 x1, |x1|^2, 1] times
// [x2, 1, |x2|^2]^T, floored at 1e-30, square root.
ir::Value* euclideanThroughMatmul(LoweringContext& ctx, ir::Value* x1, ir::Value* x2) {
  const int64_t last = x1->type().rank() - 1;
  ir::Value* norms1 = sumAlong(ctx, squares(ctx, x1), last, true);
  ir::Value* norms2 = sumAlong(ctx, squares(ctx, x2), last, true);
  ir::Value* ones1 = constantFilled(ctx, norms1->type(), 1.0);
  ir::Value* ones2 = constantFilled(ctx, norms2->type(), 1.0);
  ir::Value* left =
      ctx.emit(ir::OpKind::Concat, {affine(ctx, x1, -2.0, 0.0), norms1, ones1}, {{"dim", last}});
  ir::Value* right = ctx.emit(ir::OpKind::Concat, {x2, ones2, norms2}, {{"dim", last}});
  ir::Value* products = ctx.emit(ir::OpKind::MatMul, {left, lastTwoSwapped(ctx, right)});
  return ctx.emit(ir::OpKind::Sqrt, {emitPointwise(ctx, products, "clamp", {1e-30, INFINITY})});
}

// pdist(input [N, M], p=2) -> [N (N - 1) / 2]: the p-norms of the differences
// of every pair of rows i < j, in row-major order of the pairs, as PyTorch's
// (its kernel takes each difference's norm as cdist's direct path does).
void lowerPdist(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const double p = ctx.toDouble(1);
  if (x->type().rank() != 2) {
    ctx.unsupported("pdist of " + x->type().str() + " (it takes a 2-D tensor, one row per point)");
  }
  if (p < 0.0 || std::isinf(p)) {
    ctx.unsupported("pdist with p=" + std::to_string(p) + " (popsim takes 0 <= p < inf)");
  }
  const int64_t n = x->type().shape[0];
  if (n < 2) ctx.unsupported("pdist of fewer than 2 rows (an empty result)");
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  }
  const auto rows = [&](const std::vector<int64_t>& positions) {
    return ctx.emit(ir::OpKind::IndexSelect, {x, int64Constant(ctx, positions)},
                    {{"dim", int64_t{0}}});
  };
  ir::Value* differences = ctx.emit(ir::OpKind::Sub, {rows(first), rows(second)});
  ir::Value* norms = vectorNormOver(ctx, differences, p, {1}, false);
  if (p == 0.0) { // a count of non-zero differences, NaN where one is NaN (as PyTorch's)
    ir::Value* nan =
        castTo(ctx, emitBinary(ctx, "ne", differences, differences), ir::DType::Float32);
    ir::Value* anyNaN =
        castTo(ctx, reduceExtremum(ctx, nan, {1}, false, true, "split"), ir::DType::Bool);
    norms = ctx.emit(ir::OpKind::Where,
                     {anyNaN, constantFilled(ctx, {norms->type().dtype, {}}, std::nan("")), norms});
  }
  ctx.setOutput(0, norms);
}

// cdist(x1 [..., P, M], x2 [..., R, M], p=2, compute_mode=None) -> [..., P, R]:
// the p-norms of the differences of every pair of rows.
void lowerCdist(LoweringContext& ctx) {
  ir::Value* x1 = floatTensor(ctx, 0);
  ir::Value* x2 = floatTensor(ctx, 1);
  const double p = ctx.toDouble(2);
  if (std::isinf(p)) {
    // (PyTorch's kernel skips NaN differences and gives every tied element
    // the whole gradient, unlike the infinity norm.)
    ctx.unsupported(
        "cdist with p=inf; compute (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs().amax(-1), "
        "which propagates NaN as norms do");
  }
  if (p < 0.0) ctx.unsupported("cdist with p=" + std::to_string(p) + "; p must be >= 0");
  if (x1->type().rank() < 2 || x2->type().rank() < 2 ||
      x1->type().shape.back() != x2->type().shape.back()) {
    ctx.unsupported("x1 " + x1->type().str() + " and x2 " + x2->type().str() +
                    ": cdist takes [..., P, M] and [..., R, M] tensors with the same M");
  }
  const int64_t rows1 = x1->type().shape[x1->type().shape.size() - 2];
  const int64_t rows2 = x2->type().shape[x2->type().shape.size() - 2];
  const int64_t mode = ctx.isNone(3) ? 0 : ctx.toInt(3);
  const bool matmul = p == 2.0 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25)));
  if (matmul && x1->type().rank() == x2->type().rank()) {
    ctx.setOutput(0, euclideanThroughMatmul(ctx, x1, x2));
    return;
  }
  if (matmul) {
    ctx.unsupported("cdist through a matrix product (p = 2 with more than 25 rows) of tensors of "
                    "different ranks; pass compute_mode='donot_use_mm_for_euclid_dist'");
  }
  ir::Value* differences =
      ctx.emit(ir::OpKind::Sub, {unsqueezed(ctx, x1, 1), unsqueezed(ctx, x2, 2)});
  const int64_t last = differences->type().rank() - 1;
  if (p == 1.0) { // (the gradient of a NaN difference is NaN here, unlike the 1-norm's)
    ctx.setOutput(0, sumAlong(ctx, emitPointwise(ctx, differences, "magnitude"), last, false));
    return;
  }
  ctx.setOutput(0, vectorNormOver(ctx, differences, p, {last}, false));
}

} // namespace

void registerSimilarities(LoweringRegistry& registry) {
  registry.add("aten::cdist", lowerCdist);
  registry.add("aten::pdist", lowerPdist);
  registry.add("aten::cosine_embedding_loss", lowerCosineEmbeddingLoss);
  registry.add("aten::cosine_similarity", lowerCosineSimilarity);
}

} // namespace popsim::frontend::lowerings
