// Windowed pooling: max_pool{1,2,3}d (and their _with_indices forms, the
// indices PyTorch gives), avg_pool{1,2,3}d, adaptive_{avg,max}_pool{1,2,3}d,
// and max_unpool{2,3}d, which writes pooled values back at their indices.
// 1-D and 3-D inputs pool through the 2-D ops (pooled_planes.h).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"
#include "frontend/lowerings/pooled_planes.h"

#include <numeric>

namespace popsim::frontend::lowerings {
namespace {

// One value per pooled dimension (`count` of them) from a list of one or `count`.
std::vector<int64_t> perDim(const LoweringContext& ctx, std::vector<int64_t> values, size_t count,
                            const std::string& what) {
  if (values.size() == 1) values.assign(count, values[0]);
  if (values.size() != count) {
    ctx.unsupported(what + " has " + std::to_string(values.size()) + " values for " +
                    std::to_string(count) + " pooled dimensions");
  }
  return values;
}

// A pooling window per pooled dimension: kernel, stride, padding, dilation.
struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
};

// The window arguments at 1 (kernel), 2 (stride, the kernel when empty), 3
// (padding) and, for max pooling, 4 (dilation).
Window windowOf(LoweringContext& ctx, size_t count, bool withDilation) {
  Window w;
  w.kernel = perDim(ctx, ctx.toIntList(1), count, "kernel_size");
  const std::vector<int64_t> stride = ctx.toIntList(2);
  w.stride = stride.empty() ? w.kernel : perDim(ctx, stride, count, "stride");
  w.padding = perDim(ctx, ctx.toIntList(3), count, "padding");
  w.dilation = withDilation ? perDim(ctx, ctx.toIntList(4), count, "dilation")
                            : std::vector<int64_t>(count, 1);
  return w;
}

// The 2-D op's window over pooled dims `rows` and `columns`; no `rows`
// means a height of one.
ir::Attributes planeWindow(const Window& w, std::optional<size_t> rows, size_t columns,
                           ir::Attributes attrs) {
  const auto pick = [&](const std::vector<int64_t>& values, int64_t flat) {
    return std::vector<int64_t>{rows ? values[*rows] : flat, values[columns]};
  };
  attrs.set("kernel", pick(w.kernel, 1));
  attrs.set("stride", pick(w.stride, 1));
  attrs.set("padding", pick(w.padding, 0));
  return attrs;
}

// The 2-D pooling op of a window: max (recording where each maximum is when
// `indices`) or average.
PlanePool windowPool(LoweringContext& ctx, bool max, bool indices, ir::Attributes attrs) {
  return [&ctx, max, indices, attrs](ir::Value* planes) -> Pooled {
    if (!max) return {ctx.emit(ir::OpKind::AvgPool2d, {planes}, attrs)};
    if (!indices) return {ctx.emit(ir::OpKind::MaxPool2d, {planes}, attrs)};
    const auto outputs = ctx.emitMulti(ir::OpKind::MaxPool2dTrain, {planes}, attrs);
    return {outputs[0], castTo(ctx, outputs[1], ir::DType::Int64)};
  };
}

// max_pool{1,2,3}d[_with_indices](input, kernel, stride, padding, dilation,
// ceil_mode) and avg_pool{1,2,3}d(input, kernel, stride, padding, ceil_mode,
// count_include_pad[, divisor_override]). Windows over a volume pool as
// their planes and then their depth (the max of maxima, and the mean of
// means: PyTorch's divisor is the product of the per-dimension counts,
// padding counted or not).
template <int64_t Spatial, bool Max, bool Indices = false> void lowerPool(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  const Window w = windowOf(ctx, Spatial, Max);
  ir::Attributes extra;
  // A volume's divisor_override divides the whole box's sum: its planes and
  // then its depth are summed (divisor 1) and the sum divided once.
  int64_t volumeDivisor = 0;
  if (Max) {
    extra.set("ceil_mode", ctx.toBool(5));
  } else {
    extra.set("ceil_mode", ctx.toBool(4));
    extra.set("count_include_pad", ctx.toBool(5));
    const int64_t divisor = ctx.numInputs() > 6 && !ctx.isNone(6) ? ctx.toInt(6) : 0;
    if (ctx.numInputs() > 6 && !ctx.isNone(6) && divisor <= 0) {
      ctx.unsupported("divisor_override must be positive");
    }
    volumeDivisor = Spatial == 3 ? divisor : 0;
    extra.set("divisor_override", volumeDivisor > 0 ? int64_t{1} : divisor);
  }
  const auto pool = [&](std::optional<size_t> rows, size_t columns) {
    ir::Attributes attrs = planeWindow(w, rows, columns, extra);
    if (Max) {
      const int64_t across = rows ? w.dilation[*rows] : 1;
      attrs.set("dilation", std::vector<int64_t>{across, w.dilation[columns]});
    }
    return windowPool(ctx, Max, Indices, attrs);
  };
  ir::Value* x = batched(ctx, input, Spatial);
  Pooled y = Spatial == 1   ? poolRows(ctx, x, pool(std::nullopt, 0))
             : Spatial == 2 ? pool(0, 1)(x)
                            : poolVolume(ctx, x, pool(1, 2), pool(std::nullopt, 0));
  if (volumeDivisor > 0) {
    y.values = divideByNumber(ctx, y.values, static_cast<double>(volumeDivisor));
  }
  setPooledOutputs(ctx, y, input, Spatial);
}

// adaptive_{avg,max}_pool{1,2,3}d(input, output_size): bins from
// floor(i * in / out) to ceil((i + 1) * in / out) along each dim; max
// pooling also returns PyTorch's indices (the first maximum, the last NaN).
template <int64_t Spatial, bool Max> void lowerAdaptivePool(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  const std::vector<int64_t> size = perDim(ctx, ctx.toIntList(1), Spatial, "output_size");
  const auto pool = [&](int64_t rows, int64_t columns) -> PlanePool {
    const ir::Attributes attrs{{"output_size", std::vector<int64_t>{rows, columns}}};
    return [&ctx, attrs](ir::Value* planes) -> Pooled {
      if (!Max) return {ctx.emit(ir::OpKind::AdaptiveAvgPool2d, {planes}, attrs)};
      const auto outputs = ctx.emitMulti(ir::OpKind::AdaptiveMaxPool2d, {planes}, attrs);
      return {outputs[0], castTo(ctx, outputs[1], ir::DType::Int64)};
    };
  };
  ir::Value* x = batched(ctx, input, Spatial);
  const Pooled y = Spatial == 1   ? poolRows(ctx, x, pool(1, size[0]))
                   : Spatial == 2 ? pool(size[0], size[1])(x)
                                  : poolVolume(ctx, x, pool(size[1], size[2]), pool(1, size[0]));
  setPooledOutputs(ctx, y, input, Spatial);
}

// max_unpool2d(input, indices, output_size) and max_unpool3d(input,
// indices, output_size, stride, padding): zeros of output_size with each
// value written at its index in its plane (or volume); PyTorch's stride and
// padding only check the sizes. Indices out of range are execution errors.
template <int64_t Spatial> void lowerMaxUnpool(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  ir::Value* indices = castTo(ctx, ctx.tensor(1), ir::DType::Int64);
  if (indices->type().shape != input->type().shape) {
    ctx.unsupported("indices " + indices->type().str() + " of another shape than the input " +
                    input->type().str() + "; pass the indices max pooling returned with it");
  }
  const std::vector<int64_t> size = ctx.toIntList(2);
  if (static_cast<int64_t>(size.size()) != Spatial) {
    ctx.unsupported("output_size of " + std::to_string(size.size()) + " values for " +
                    std::to_string(Spatial) + " spatial dimensions");
  }
  ir::Value* x = batched(ctx, input, Spatial);
  const ir::Shape& shape = x->type().shape;
  const int64_t maps = shape[0] * shape[1];
  const int64_t pooled = x->type().numel() / std::max<int64_t>(maps, 1);
  const int64_t plane = std::accumulate(size.begin(), size.end(), int64_t{1}, std::multiplies<>());
  ir::Value* written =
      ctx.emit(ir::OpKind::Scatter,
               {constantFilled(ctx, {x->type().dtype, {shape[0], shape[1], plane}}, 0.0),
                reshape(ctx, batched(ctx, indices, Spatial), {shape[0], shape[1], pooled}),
                reshape(ctx, x, {shape[0], shape[1], pooled})},
               {{"dim", int64_t{2}}, {"reduce", std::string("none")}});
  ir::Shape out{shape[0], shape[1]};
  out.insert(out.end(), size.begin(), size.end());
  ctx.setOutput(0, unbatchedLike(ctx, reshape(ctx, written, out), input, Spatial));
}

// Fractional max pooling draws its pooling regions at random for each call.
void lowerFractionalMaxPool(LoweringContext& ctx) {
  const std::string dims = ctx.opName() == "aten::fractional_max_pool3d" ? "3d" : "2d";
  ctx.unsupported(ctx.opName() + " (its pooling regions are drawn at random on the host for " +
                  "every call); use max_pool" + dims + ", or adaptive_max_pool" + dims +
                  " for a given output size");
}

} // namespace

void registerPooling(LoweringRegistry& registry) {
  registry.add("aten::fractional_max_pool2d", lowerFractionalMaxPool);
  registry.add("aten::fractional_max_pool3d", lowerFractionalMaxPool);
  registry.add("aten::max_pool1d", lowerPool<1, true>);
  registry.add("aten::max_pool2d", lowerPool<2, true>);
  registry.add("aten::max_pool3d", lowerPool<3, true>);
  registry.add("aten::max_pool1d_with_indices", lowerPool<1, true, true>);
  registry.add("aten::max_pool2d_with_indices", lowerPool<2, true, true>);
  registry.add("aten::max_pool3d_with_indices", lowerPool<3, true, true>);
  registry.add("aten::avg_pool1d", lowerPool<1, false>);
  registry.add("aten::avg_pool2d", lowerPool<2, false>);
  registry.add("aten::avg_pool3d", lowerPool<3, false>);
  registry.add("aten::adaptive_avg_pool1d", lowerAdaptivePool<1, false>);
  registry.add("aten::adaptive_avg_pool2d", lowerAdaptivePool<2, false>);
  registry.add("aten::adaptive_avg_pool3d", lowerAdaptivePool<3, false>);
  registry.add("aten::adaptive_max_pool1d", lowerAdaptivePool<1, true>);
  registry.add("aten::adaptive_max_pool2d", lowerAdaptivePool<2, true>);
  registry.add("aten::adaptive_max_pool3d", lowerAdaptivePool<3, true>);
  registry.add("aten::max_unpool2d", lowerMaxUnpool<2>);
  registry.add("aten::max_unpool3d", lowerMaxUnpool<3>);
}

} // namespace popsim::frontend::lowerings
