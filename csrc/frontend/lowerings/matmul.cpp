#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <limits>

namespace popsim::frontend::lowerings {
namespace {

ir::Shape withoutDim(const ir::Shape& shape, size_t dim) {
  ir::Shape out = shape;
  out.erase(out.begin() + static_cast<int64_t>(dim));
  return out;
}

// torch.matmul: 1-D operands become a row (left) or column (right) vector,
// and the added dimension is removed from the result again.
ir::Value* matmul(LoweringContext& ctx, ir::Value* a, ir::Value* b) {
  const bool vectorA = a->type().rank() == 1;
  const bool vectorB = b->type().rank() == 1;
  if (a->type().rank() == 0 || b->type().rank() == 0) {
    ctx.unsupported("matmul of a 0-d tensor");
  }
  if (vectorA) a = reshape(ctx, a, {1, a->type().shape[0]});
  if (vectorB) b = reshape(ctx, b, {b->type().shape[0], 1});
  ir::Value* y = ctx.emit(ir::OpKind::MatMul, {a, b});
  ir::Shape shape = y->type().shape;
  if (vectorB) shape = withoutDim(shape, shape.size() - 1);
  if (vectorA) shape = withoutDim(shape, shape.size() - (vectorB ? 1 : 2));
  return reshape(ctx, y, shape);
}

// matmul, mm and bmm; and mv (matrix times vector), dot and vdot (vector
// times vector, a 0-d result; vdot conjugates nothing in real numbers), which
// spectral_norm's power iteration uses. PyTorch's own ranks checks ran while
// tracing, so the operands are those matmul's rules turn into the same product.
void lowerMatMul(LoweringContext& ctx) {
  ctx.setOutput(0, matmul(ctx, floatTensor(ctx, 0), floatTensor(ctx, 1)));
}

// aten::linear(input, weight, bias?)
void lowerLinear(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* weight = floatTensor(ctx, 1);
  if (weight->type().rank() != 2) {
    ctx.unsupported("linear with a weight of rank " + std::to_string(weight->type().rank()));
  }
  const bool vector = x->type().rank() == 1;
  if (vector) x = reshape(ctx, x, {1, x->type().shape[0]});
  std::vector<ir::Value*> inputs = {x, weight};
  if (!ctx.isNone(2)) inputs.push_back(floatTensor(ctx, 2));
  ir::Value* y = ctx.emit(ir::OpKind::Linear, inputs);
  ctx.setOutput(0, vector ? reshape(ctx, y, {weight->type().shape[0]}) : y);
}

// aten::addmm / baddbmm / addmv(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
void lowerAddMatMul(LoweringContext& ctx) {
  ir::Value* bias = floatTensor(ctx, 0);
  ir::Value* product = matmul(ctx, floatTensor(ctx, 1), floatTensor(ctx, 2));
  const double beta = ctx.numInputs() > 3 ? ctx.toDouble(3) : 1.0;
  const double alpha = ctx.numInputs() > 4 ? ctx.toDouble(4) : 1.0;
  // addmm and addmv with alpha 0 leave the product out of the result, as
  // eager does (a NaN or infinity in it does not show): beta * bias, or zeros
  // when beta is 0 too. The product stays behind a where() that never picks
  // it, so the backward pass still multiplies its zero gradient through the
  // operands, as eager's (NaN where an operand is NaN). baddbmm keeps the
  // product in eager, and so here.
  if (alpha == 0.0 && ctx.opName() != "aten::baddbmm") {
    const ir::TensorType& type = product->type();
    ir::Value* kept = beta == 0.0 ? constantFilled(ctx, type, 0.0)
                                  : broadcastTo(ctx, affine(ctx, bias, beta, 0.0), type.shape);
    ir::Value* never = constantFilled(ctx, {ir::DType::Bool, {}}, 0.0);
    ctx.setOutput(0, ctx.emit(ir::OpKind::Where, {never, product, kept}));
    return;
  }
  product = affine(ctx, product, alpha, 0.0);
  if (beta == 0.0) {
    ctx.setOutput(0, product);
    return;
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::Add, {product, affine(ctx, bias, beta, 0.0)}));
}

// aten::addr(input, vec1, vec2, beta, alpha) = beta * input + alpha * outer(vec1, vec2),
// and aten::addbmm(input, batch1, batch2, beta, alpha) = beta * input + alpha *
// (the sum over the batch of batch1 @ batch2): addmm's with another product.
void lowerAddOuterOrBatchSum(LoweringContext& ctx) {
  ir::Value* a = floatTensor(ctx, 1);
  ir::Value* b = floatTensor(ctx, 2);
  ir::Value* product = nullptr;
  if (ctx.opName() == "aten::addr") {
    product = matmul(ctx, reshape(ctx, a, {a->type().numel(), 1}),
                     reshape(ctx, b, {1, b->type().numel()}));
  } else {
    product = ctx.emit(ir::OpKind::ReduceSum, {matmul(ctx, a, b)},
                       {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}});
  }
  const double beta = ctx.toDouble(3);
  const double alpha = ctx.toDouble(4);
  product = affine(ctx, product, alpha, 0.0);
  if (beta == 0.0) { // as eager: the input is not read, so its NaNs do not show
    ctx.setOutput(0, product);
    return;
  }
  ctx.setOutput(0,
                ctx.emit(ir::OpKind::Add, {product, affine(ctx, floatTensor(ctx, 0), beta, 0.0)}));
}

// aten::inner(a, b): sums over the last dimension of both, the result shaped
// a.shape[:-1] + b.shape[:-1] (a product when either is 0-d).
void lowerInner(LoweringContext& ctx) {
  ir::Value* a = floatTensor(ctx, 0);
  ir::Value* b = floatTensor(ctx, 1);
  if (a->type().rank() == 0 || b->type().rank() == 0) {
    ctx.setOutput(0, ctx.emit(ir::OpKind::Mul, {a, b}));
    return;
  }
  const ir::Shape& sa = a->type().shape;
  const ir::Shape& sb = b->type().shape;
  const int64_t k = sa.back();
  ir::Value* rows = reshape(ctx, a, {a->type().numel() / std::max<int64_t>(k, 1), k});
  ir::Value* columns =
      permute(ctx, reshape(ctx, b, {b->type().numel() / std::max<int64_t>(k, 1), k}), {1, 0});
  ir::Shape shape(sa.begin(), sa.end() - 1);
  shape.insert(shape.end(), sb.begin(), sb.end() - 1);
  ctx.setOutput(0, reshape(ctx, matmul(ctx, rows, columns), shape));
}

// aten::t: transpose of a matrix; vectors and scalars are unchanged.
void lowerTranspose2d(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ctx.setOutput(0, x->type().rank() < 2 ? x : permute(ctx, x, {1, 0}));
}

// aten::numpy_T (x.T): the dimensions reversed. aten::mT, mH, adjoint and
// matrix_H (x.mT, x.mH, x.adjoint(), x.H): the last two swapped (the
// conjugate of a real tensor is itself; PyTorch's checks on the rank ran
// while tracing).
void lowerReversedDims(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    perm[static_cast<size_t>(d)] = ctx.opName() == "aten::numpy_T" ? rank - 1 - d : d;
  if (ctx.opName() != "aten::numpy_T" && rank >= 2) {
    std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  }
  ctx.setOutput(0, rank < 2 ? x : permute(ctx, x, perm));
}

// The product of matrices[first..last] in the order PyTorch's multi_dot
// picks: for three, the cheaper of (AB)C and A(BC); for more, the
// matrix-chain order of least multiplications (the first split among
// equals); rows[i] x rows[i + 1] is the shape of matrix i.
ir::Value* chainProduct(LoweringContext& ctx, const std::vector<ir::Value*>& matrices,
                        const std::vector<std::vector<size_t>>& split, size_t first, size_t last) {
  if (first == last) return matrices[first];
  const size_t k = split[first][last];
  return ctx.emit(ir::OpKind::MatMul, {chainProduct(ctx, matrices, split, first, k),
                                       chainProduct(ctx, matrices, split, k + 1, last)});
}

std::vector<std::vector<size_t>> chainOrder(const std::vector<int64_t>& rows) {
  const size_t n = rows.size() - 1;
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  if (n == 3) { // (a x b)(b x c)(c x d)
    const int64_t a = rows[0], b = rows[1], c = rows[2], d = rows[3];
    const bool rightFirst = a * c * (b + d) > b * d * (a + c);
    split[0][2] = rightFirst ? 0 : 1;
    split[1][2] = 1;
    split[0][1] = 0;
    return split;
  }
  std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0));
  for (size_t length = 1; length < n; ++length) {
    for (size_t i = 0; i + length < n; ++i) {
      const size_t j = i + length;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t k = i; k < j; ++k) {
        const int64_t q = cost[i][k] + cost[k + 1][j] + rows[i] * rows[k + 1] * rows[j + 1];
        if (q < cost[i][j]) {
          cost[i][j] = q;
          split[i][j] = k;
        }
      }
    }
  }
  return split;
}

// linalg_multi_dot(tensors) and chain_matmul(matrices): the product of the
// matrices (multi_dot's first may be a vector, a row, and its last a column;
// their dims are removed from the result again).
void lowerMultiDot(LoweringContext& ctx) {
  std::vector<ir::Value*> matrices = withCommonDType(ctx, ctx.tensorList(0));
  if (matrices.size() == 1) return ctx.setOutput(0, matrices[0]); // chain_matmul's clone
  const bool rowVector = matrices.front()->type().rank() == 1;
  const bool columnVector = matrices.back()->type().rank() == 1;
  if (rowVector)
    matrices.front() = reshape(ctx, matrices.front(), {1, matrices.front()->type().numel()});
  if (columnVector)
    matrices.back() = reshape(ctx, matrices.back(), {matrices.back()->type().numel(), 1});
  std::vector<int64_t> rows;
  for (ir::Value* m : matrices) {
    if (m->type().rank() != 2)
      ctx.unsupported(ctx.opName() + " of a tensor of rank " + std::to_string(m->type().rank()));
    rows.push_back(m->type().shape[0]);
  }
  rows.push_back(matrices.back()->type().shape[1]);
  ir::Value* y = chainProduct(ctx, matrices, chainOrder(rows), 0, matrices.size() - 1);
  ir::Shape shape;
  if (!rowVector) shape.push_back(rows.front());
  if (!columnVector) shape.push_back(rows.back());
  ctx.setOutput(0, reshape(ctx, y, shape));
}

} // namespace

void registerMatMul(LoweringRegistry& registry) {
  registry.add("aten::linear", lowerLinear);
  registry.add("aten::matmul", lowerMatMul);
  registry.add("aten::mm", lowerMatMul);
  registry.add("aten::bmm", lowerMatMul);
  registry.add("aten::mv", lowerMatMul);
  registry.add("aten::dot", lowerMatMul);
  registry.add("aten::vdot", lowerMatMul);
  registry.add("aten::addmm", lowerAddMatMul);
  registry.add("aten::baddbmm", lowerAddMatMul);
  registry.add("aten::addmv", lowerAddMatMul);
  registry.add("aten::addr", lowerAddOuterOrBatchSum);
  registry.add("aten::addbmm", lowerAddOuterOrBatchSum);
  registry.add("aten::inner", lowerInner);
  registry.add("aten::linalg_multi_dot", lowerMultiDot);
  registry.add("aten::chain_matmul", lowerMultiDot);
  registry.addWithInPlace("aten::t", lowerTranspose2d);
  for (const char* op :
       {"aten::numpy_T", "aten::mT", "aten::mH", "aten::adjoint", "aten::matrix_H"})
    registry.add(op, lowerReversedDims);
}

} // namespace popsim::frontend::lowerings
