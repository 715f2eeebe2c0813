#include "common/float16.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cstring>

namespace popsim::frontend::lowerings {
namespace {

template <typename T> std::vector<uint8_t> filled(int64_t count, double value) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * sizeof(T));
  const T element = static_cast<T>(value);
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(bytes.data() + i * sizeof(T), &element, sizeof(T));
  }
  return bytes;
}

template <typename T>
ir::Value* constantOf(LoweringContext& ctx, ir::DType dtype, const std::vector<T>& values,
                      std::optional<ir::Shape> shape) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  ir::Shape s = shape.value_or(ir::Shape{static_cast<int64_t>(values.size())});
  POPSIM_ASSERT(ir::elementCount(s) == static_cast<int64_t>(values.size()), "a constant of ",
                values.size(), " elements for shape ", ir::shapeToString(s), ".");
  return ctx.constant({dtype, std::move(s)}, std::move(bytes));
}

} // namespace

ir::Value* int64Constant(LoweringContext& ctx, const std::vector<int64_t>& values,
                         std::optional<ir::Shape> shape) {
  return constantOf(ctx, ir::DType::Int64, values, std::move(shape));
}

ir::Value* floatConstant(LoweringContext& ctx, const std::vector<float>& values,
                         std::optional<ir::Shape> shape) {
  return constantOf(ctx, ir::DType::Float32, values, std::move(shape));
}

// Shapes in a trace are static, so tensors created like another one are
// compile-time constants.
ir::Value* constantFilled(LoweringContext& ctx, const ir::TensorType& type, double value) {
  const int64_t count = type.numel();
  switch (type.dtype) {
  case ir::DType::Float32: return ctx.constant(type, filled<float>(count, value));
  case ir::DType::Float16: // held in float32 carriers
    return ctx.constant(type, filled<float>(count, roundToHalf(static_cast<float>(value))));
  case ir::DType::Int32: return ctx.constant(type, filled<int32_t>(count, value));
  case ir::DType::Int64: return ctx.constant(type, filled<int64_t>(count, value));
  case ir::DType::Bool: return ctx.constant(type, filled<bool>(count, value != 0.0));
  case ir::DType::Float64: break;
  }
  ctx.unsupported("creating float64 tensors (popsim computes in float32)");
}

namespace {

// aten::zeros_like / ones_like(self, dtype=None, ...), full_like(self, fill_value, dtype=None, ...)
template <int Fill> void lowerFilledLike(LoweringContext& ctx) {
  const ir::TensorType like = ctx.tensor(0)->type();
  const double value = Fill < 0 ? ctx.toDouble(1) : Fill;
  ctx.setOutput(0,
                constantFilled(ctx, {dtypeArgument(ctx).value_or(like.dtype), like.shape}, value));
}

// aten::new_zeros / new_ones(self, size, dtype=None, ...), new_full(self, size, fill_value, ...)
template <int Fill> void lowerNewFilled(LoweringContext& ctx) {
  const ir::DType dtype = dtypeArgument(ctx).value_or(ctx.tensor(0)->type().dtype);
  const double value = Fill < 0 ? ctx.toDouble(2) : Fill;
  ctx.setOutput(0, constantFilled(ctx, {dtype, ctx.toIntList(1)}, value));
}

// `value` converted to `type`'s dtype (as eager copy_ and fill_ convert) and
// broadcast to its shape: the new contents of a tensor written whole in place.
ir::Value* writtenWhole(LoweringContext& ctx, ir::Value* value, const ir::TensorType& type) {
  if (value->type().dtype != type.dtype) {
    value =
        ctx.emit(ir::OpKind::Cast, {value}, {{"dtype", std::string(ir::dtypeName(type.dtype))}});
  }
  if (value->type().shape == type.shape) {
    return value;
  }
  return ctx.emit(ir::OpKind::Broadcast, {value}, {{"shape", type.shape}});
}

// aten::fill_(self, value): value is a number or a 0-d tensor. (x[:, 0] = 1
// traces as fill_ on a view; aliasing.cpp carries it into x.)
void lowerFill(LoweringContext& ctx) {
  const ir::TensorType type = ctx.tensor(0)->type();
  if (const std::optional<double> value = ctx.staticScalar(1)) {
    ctx.setOutput(0, constantFilled(ctx, type, *value));
    return;
  }
  ir::Value* value = ctx.tensor(1);
  if (value->type().rank() != 0) {
    ctx.unsupported("fill_ with a tensor of rank " + std::to_string(value->type().rank()) +
                    " (PyTorch takes a number or a 0-d tensor)");
  }
  ctx.setOutput(0, writtenWhole(ctx, value, type));
}

// aten::zero_(self)
void lowerZero(LoweringContext& ctx) {
  ctx.setOutput(0, constantFilled(ctx, ctx.tensor(0)->type(), 0.0));
}

// aten::copy_(self, src, non_blocking): src broadcast to self.
void lowerCopy(LoweringContext& ctx) {
  ctx.setOutput(0, writtenWhole(ctx, ctx.tensor(1), ctx.tensor(0)->type()));
}

} // namespace

void registerCreation(LoweringRegistry& registry) {
  registry.add("aten::fill_", lowerFill);
  registry.add("aten::zero_", lowerZero);
  registry.add("aten::copy_", lowerCopy);
  registry.add("aten::zeros_like", lowerFilledLike<0>);
  registry.add("aten::ones_like", lowerFilledLike<1>);
  registry.add("aten::full_like", lowerFilledLike<-1>);
  registry.add("aten::new_zeros", lowerNewFilled<0>);
  registry.add("aten::new_ones", lowerNewFilled<1>);
  registry.add("aten::new_full", lowerNewFilled<-1>);
}

} // namespace popsim::frontend::lowerings
