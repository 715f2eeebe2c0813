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

} // namespace

void registerEmbedding(LoweringRegistry& registry) {
  registry.add("aten::embedding", lowerEmbedding);
}

} // namespace popsim::frontend::lowerings
