#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// aten::embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False)
void lowerEmbedding(LoweringContext& ctx) {
  ir::Value* weight = floatTensor(ctx, 0);
  ir::Value* indices = ctx.tensor(1);
  if (ctx.numInputs() > 3 && ctx.toBool(3)) {
    ctx.unsupported("embedding with scale_grad_by_freq=True");
  }
  const int64_t padding = ctx.numInputs() > 2 ? ctx.toInt(2) : -1;
  ctx.setOutput(0, ctx.emit(ir::OpKind::Embedding, {weight, indices},
                            {{"padding_idx", padding < 0 ? int64_t{-1} : padding}}));
}

// aten::embedding_renorm_(self, indices, max_norm, norm_type), which
// F.embedding(..., max_norm=) calls on the weight (under no_grad) before the
// lookup, as eager's kernel computes it: each row the indices name whose
// norm_type-norm exceeds max_norm is scaled by max_norm / (norm + 1e-7), in
// place; the other rows stay as they are.
void lowerEmbeddingRenorm(LoweringContext& ctx) {
  ir::Value* weight = floatTensor(ctx, 0);
  const ir::TensorType type = weight->type();
  if (type.rank() != 2) {
    ctx.unsupported("embedding_renorm_ of a " + type.str() + " weight; it takes a 2-D one");
  }
  ir::Value* indices = ctx.tensor(1);
  if (indices->type().dtype != ir::DType::Int64 && indices->type().dtype != ir::DType::Int32) {
    ctx.unsupported("indices of " + indices->type().str() + "; they are int64 or int32 tensors");
  }
  const double maxNorm = ctx.toDouble(2);
  const double p = ctx.toDouble(3);
  const int64_t rows = type.shape[0];
  const int64_t count = indices->type().numel();
  // How often each row is named (a row named twice is scaled once, as in eager).
  ir::Value* named = ctx.emit(ir::OpKind::IndexAdd,
                              {constantFilled(ctx, {ir::DType::Float32, {rows}}, 0.0),
                               reshape(ctx, castTo(ctx, indices, ir::DType::Int64), {count}),
                               constantFilled(ctx, {ir::DType::Float32, {count}}, 1.0)},
                              {{"dim", int64_t{0}}, {"accumulate", true}});
  ir::Value* values = castTo(ctx, weight, ir::DType::Float32);
  ir::Value* norms = vectorNormOver(ctx, values, p, {1}, true); // [rows, 1]
  ir::Value* scale =
      ctx.emit(ir::OpKind::Div, {floatScalar(ctx, maxNorm), affine(ctx, norms, 1.0, 1e-7)});
  ir::Value* scaled = ctx.emit(ir::OpKind::Mul, {values, scale});
  ir::Value* renormed =
      emitBinary(ctx, "logical_and",
                 emitBinary(ctx, "gt", reshape(ctx, named, {rows, 1}), floatScalar(ctx, 0.0)),
                 emitBinary(ctx, "gt", norms, floatScalar(ctx, maxNorm)));
  ir::Value* result =
      ctx.emit(ir::OpKind::Where, {broadcastTo(ctx, renormed, type.shape), scaled, values});
  ctx.setOutput(0, castTo(ctx, result, type.dtype));
}

} // namespace

void registerEmbedding(LoweringRegistry& registry) {
  registry.add("aten::embedding", lowerEmbedding);
  registry.add("aten::embedding_renorm_", lowerEmbeddingRenorm);
}

} // namespace popsim::frontend::lowerings
