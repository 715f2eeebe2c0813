#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cstring>

namespace popsim::frontend::lowerings {
namespace {

// A float32 constant of `shape` filled with `value` (stands in for a missing
// affine weight or bias).
ir::Value* filled(LoweringContext& ctx, const ir::Shape& shape, float value) {
  const ir::TensorType type{ir::DType::Float32, shape};
  std::vector<uint8_t> bytes(type.bytes());
  for (size_t offset = 0; offset < bytes.size(); offset += sizeof(float)) {
    std::memcpy(bytes.data() + offset, &value, sizeof(float));
  }
  return ctx.constant(type, std::move(bytes));
}

ir::Value* tensorOr(LoweringContext& ctx, size_t index, const ir::Shape& shape, float value) {
  return ctx.isNone(index) ? filled(ctx, shape, value) : floatTensor(ctx, index);
}

// aten::batch_norm(input, weight, bias, running_mean, running_var, training,
//                  momentum, eps, cudnn_enabled), with the running statistics.
void lowerBatchNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  if (x->type().rank() < 2) {
    ctx.unsupported("batch_norm of a tensor of rank " + std::to_string(x->type().rank()));
  }
  if (ctx.isNone(3) || ctx.isNone(4)) {
    ctx.unsupported("batch_norm without running statistics (track_running_stats=False) needs "
                    "batch statistics, which inference does not compute");
  }
  if (ctx.toBool(5)) {
    ctx.unsupported("batch_norm in training mode in an inference model (call model.eval())");
  }
  const ir::Shape channels = {x->type().shape[1]};
  ctx.setOutput(0, ctx.emit(ir::OpKind::BatchNorm,
                            {x, floatTensor(ctx, 3), floatTensor(ctx, 4),
                             tensorOr(ctx, 1, channels, 1.0f), tensorOr(ctx, 2, channels, 0.0f)},
                            {{"eps", ctx.toDouble(7)}}));
}

// aten::layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
void lowerLayerNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const std::vector<int64_t> normalized = ctx.toIntList(1);
  const int64_t ndim = static_cast<int64_t>(normalized.size());
  if (ndim == 0 || ndim > x->type().rank() ||
      !std::equal(normalized.begin(), normalized.end(), x->type().shape.end() - ndim)) {
    ctx.unsupported("normalized_shape does not match the trailing dimensions of the input " +
                    x->type().str());
  }
  ctx.setOutput(
      0, ctx.emit(ir::OpKind::LayerNorm,
                  {x, tensorOr(ctx, 2, normalized, 1.0f), tensorOr(ctx, 3, normalized, 0.0f)},
                  {{"normalized_ndim", ndim}, {"eps", ctx.toDouble(4)}}));
}

} // namespace

void registerNormalization(LoweringRegistry& registry) {
  registry.add("aten::batch_norm", lowerBatchNorm);
  registry.add("aten::layer_norm", lowerLayerNorm);
}

} // namespace popsim::frontend::lowerings
