#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

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

// aten::t: transpose of a matrix; vectors and scalars are unchanged.
void lowerTranspose2d(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ctx.setOutput(0, x->type().rank() < 2 ? x : permute(ctx, x, {1, 0}));
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
  registry.add("aten::t", lowerTranspose2d);
}

} // namespace popsim::frontend::lowerings
