// Searching and bags: bucketize and searchsorted (counts of boundaries below
// each value), embedding_bag (sum, mean and max of each bag's embeddings), and the
// ops whose output size depends on the data (unique, nonzero), refused with
// the reason.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace popsim::frontend::lowerings {
namespace {

// For each value, how many boundaries lie below it (at or below it with
// `right`; all of them for NaN): the position bucketize and searchsorted return. boundaries
// [..., B] sorted along the last dim, values [..., V] (or any shape against
// 1-D boundaries).
ir::Value* positionsIn(LoweringContext& ctx, ir::Value* boundaries, ir::Value* values, bool right,
                       bool int32) {
  const ir::DType b = boundaries->type().dtype;
  const ir::DType v = values->type().dtype;
  const ir::DType common = b == ir::DType::Float32 || v == ir::DType::Float32   ? ir::DType::Float32
                           : b == ir::DType::Float16 || v == ir::DType::Float16 ? ir::DType::Float16
                                                                                : ir::DType::Int64;
  boundaries = castTo(ctx, boundaries, common);
  values = castTo(ctx, values, common);
  ir::Shape valueShape = values->type().shape;
  ir::Value* expandedValues = reshape(ctx, values, [&] {
    ir::Shape s = valueShape;
    s.push_back(1);
    return s;
  }());
  ir::Value* expandedBoundaries = boundaries;
  if (boundaries->type().rank() > 1) { // batched: [..., 1, B] against [..., V, 1]
    ir::Shape s = boundaries->type().shape;
    s.insert(s.end() - 1, 1);
    expandedBoundaries = reshape(ctx, boundaries, s);
  }
  ir::Value* below = emitBinary(ctx, right ? "le" : "lt", expandedBoundaries, expandedValues);
  if (ir::isFloat(common)) { // NaN sorts above every boundary, as in PyTorch
    below =
        emitBinary(ctx, "logical_or", below, emitBinary(ctx, "ne", expandedValues, expandedValues));
  }
  ir::Value* counts =
      ctx.emit(ir::OpKind::ReduceSum, {castTo(ctx, below, ir::DType::Int64)},
               {{"dims", std::vector<int64_t>{below->type().rank() - 1}}, {"keepdim", false}});
  return int32 ? castTo(ctx, counts, ir::DType::Int32) : counts;
}

// bucketize(self, boundaries, out_int32=False, right=False).
void lowerBucketize(LoweringContext& ctx) {
  ir::Value* boundaries = ctx.tensor(1);
  if (boundaries->type().rank() != 1) ctx.unsupported("bucketize with boundaries that are not 1-D");
  ctx.setOutput(0, positionsIn(ctx, boundaries, ctx.tensor(0), boolArgument(ctx, "right"),
                               boolArgument(ctx, "out_int32")));
}

// searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None).
void lowerSearchsorted(LoweringContext& ctx) {
  if (const auto sorter = ctx.argumentIndex("sorter"); sorter && !ctx.isNone(*sorter)) {
    ctx.unsupported("searchsorted with a sorter; sort the sequence first");
  }
  bool right = boolArgument(ctx, "right");
  if (const auto side = ctx.argumentIndex("side"); side && !ctx.isNone(*side)) {
    right = ctx.toString(*side) == "right";
  }
  ir::Value* sequence = ctx.tensor(0);
  ir::Value* values = ctx.tensor(1);
  if (sequence->type().rank() > 1 &&
      (values->type().rank() != sequence->type().rank() ||
       !std::equal(sequence->type().shape.begin(), sequence->type().shape.end() - 1,
                   values->type().shape.begin()))) {
    ctx.unsupported("searchsorted with a batched sequence " + sequence->type().str() +
                    " and values " + values->type().str() + " whose leading dims differ");
  }
  ctx.setOutput(0, positionsIn(ctx, sequence, values, right, boolArgument(ctx, "out_int32")));
}

// The maxima of embedding_bag's mode='max' as PyTorch's CPU loop finds
// them: per bag and column the first largest value, padding skipped, a NaN
// only when it comes first (a later one never compares greater), empty bags
// zero. The gradient reaches that one value's weight row, where PyTorch's
// max_indices send it. `rows` are the weight rows it came from (0 for
// empty bags), PyTorch's max_indices.
struct BagMaxima {
  ir::Value* values;
  ir::Value* rows;
};

BagMaxima bagMaxima(LoweringContext& ctx, ir::Value* vectors, ir::Value* flat, ir::Value* bagOf,
                    ir::Value* kept, int64_t bags) {
  const int64_t length = vectors->type().shape[0];
  const int64_t dim = vectors->type().shape[1];
  const double past = static_cast<double>(length); // after every position
  std::vector<float> positions(static_cast<size_t>(length));
  std::iota(positions.begin(), positions.end(), 0.0f);
  ir::Value* position = floatConstant(ctx, positions, ir::Shape{length, 1});
  // Positions skipped go to a bag past the last one, cut off at the end.
  ir::Value* target = bagOf;
  if (kept != nullptr) {
    target = ctx.emit(
        ir::OpKind::Where,
        {kept, bagOf, constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(bags))});
  }
  ir::Value* targets = broadcastTo(ctx, reshape(ctx, target, {length, 1}), {length, dim});
  const auto perBag = [&](const char* reduce, ir::Value* values, double empty) {
    return ctx.emit(
        ir::OpKind::ScatterReduce,
        {constantFilled(ctx, {ir::DType::Float32, {bags + 1, dim}}, empty), targets,
         broadcastTo(ctx, values, {length, dim})},
        {{"dim", int64_t{0}}, {"reduce", std::string(reduce)}, {"include_self", false}});
  };
  const auto atTargets = [&](ir::Value* perBagValues) {
    return ctx.emit(ir::OpKind::IndexSelect, {perBagValues, target}, {{"dim", int64_t{0}}});
  };
  ir::Value* notFirst = emitBinary(ctx, "ne", atTargets(perBag("amin", position, past)), position);
  ir::Value* laterNaN =
      emitBinary(ctx, "logical_and", emitBinary(ctx, "ne", vectors, vectors), notFirst);
  ir::Value* candidates =
      ctx.emit(ir::OpKind::Where,
               {laterNaN, floatScalar(ctx, -std::numeric_limits<double>::infinity()), vectors});
  ir::Value* match =
      emitBinary(ctx, "logical_or", emitBinary(ctx, "ne", candidates, candidates),
                 emitBinary(ctx, "eq", candidates, atTargets(perBag("amax", candidates, 0.0))));
  if (kept != nullptr)
    match = emitBinary(ctx, "logical_and", match, reshape(ctx, kept, {length, 1}));
  ir::Value* chosen = sliceAlong(
      ctx,
      perBag("amin", ctx.emit(ir::OpKind::Where, {match, position, floatScalar(ctx, past)}), past),
      0, 0, bags);
  ir::Value* found = emitBinary(ctx, "lt", chosen, floatScalar(ctx, past));
  ir::Value* at = castTo(ctx, ctx.emit(ir::OpKind::Where, {found, chosen, floatScalar(ctx, 0.0)}),
                         ir::DType::Int64);
  ir::Value* rows = reshape(ctx,
                            ctx.emit(ir::OpKind::IndexSelect,
                                     {flat, reshape(ctx, at, {bags * dim})}, {{"dim", int64_t{0}}}),
                            {bags, dim});
  return {
      ctx.emit(ir::OpKind::Where,
               {found, ctx.emit(ir::OpKind::Gather, {vectors, at}, {{"dim", int64_t{0}}}),
                floatScalar(ctx, 0.0)}),
      ctx.emit(ir::OpKind::Where, {found, rows, constantFilled(ctx, {ir::DType::Int64, {}}, 0.0)})};
}

// embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode,
// sparse, per_sample_weights, include_last_offset, padding_idx): each bag
// (a row of 2-D indices, or the indices from one offset to the next) summed
// (mode 0), averaged (mode 1) or maximised (mode 2) over its embeddings,
// empty bags zero.
void lowerEmbeddingBag(LoweringContext& ctx) {
  ir::Value* weight = floatTensor(ctx, 0);
  ir::Value* indices = castTo(ctx, ctx.tensor(1), ir::DType::Int64);
  const int64_t mode = ctx.toInt(4);
  if (ctx.toBool(3)) ctx.unsupported("embedding_bag with scale_grad_by_freq=True");
  const int64_t padding = ctx.numInputs() > 8 && !ctx.isNone(8) ? ctx.toInt(8) : -1;
  const int64_t dim = weight->type().shape[1];
  ir::Value* rows = nullptr; // the bag of each index, [L]
  int64_t bags = 0;
  ir::Value* flat = nullptr;
  if (indices->type().rank() == 2) {
    bags = indices->type().shape[0];
    const int64_t per = indices->type().shape[1];
    flat = reshape(ctx, indices, {bags * per});
    std::vector<int64_t> ids;
    for (int64_t b = 0; b < bags; ++b)
      ids.insert(ids.end(), static_cast<size_t>(per), b);
    rows = int64Constant(ctx, ids);
  } else {
    flat = indices;
    ir::Value* offsets = castTo(ctx, ctx.tensor(2), ir::DType::Int64);
    const bool includeLast = ctx.numInputs() > 7 && ctx.toBool(7);
    bags = offsets->type().numel() - (includeLast ? 1 : 0);
    if (includeLast) {
      offsets = sliceAlong(ctx, offsets, 0, 0, bags);
    }
    // bag of position i: (number of offsets <= i) - 1
    const int64_t length = flat->type().numel();
    std::vector<int64_t> positions(static_cast<size_t>(length));
    std::iota(positions.begin(), positions.end(), int64_t{0});
    ir::Value* at = int64Constant(ctx, positions);
    rows = emitBinary(ctx, "sub", positionsIn(ctx, offsets, at, true, false),
                      constantFilled(ctx, {ir::DType::Int64, {}}, 1.0));
  }
  const int64_t length = flat->type().numel();
  ir::Value* vectors = ctx.emit(ir::OpKind::Embedding, {weight, flat}, {{"padding_idx", padding}});
  ir::Value* counted = constantFilled(ctx, {ir::DType::Float32, {length}}, 1.0);
  ir::Value* kept = nullptr;
  if (padding >= 0) { // the padding index contributes nothing, and is not counted
    kept = emitBinary(ctx, "ne", flat,
                      constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(padding)));
    counted = castTo(ctx, kept, ir::DType::Float32);
  }
  ir::Value* sizes = ctx.emit(
      ir::OpKind::Scatter, {constantFilled(ctx, {ir::DType::Float32, {bags}}, 0.0), rows, counted},
      {{"dim", int64_t{0}}, {"reduce", std::string("sum")}});
  BagMaxima maxima{nullptr, nullptr};
  if (mode == 2) {
    maxima = bagMaxima(ctx, vectors, flat, rows, kept, bags);
    ctx.setOutput(0, maxima.values);
  } else {
    if (kept != nullptr) {
      vectors = ctx.emit(ir::OpKind::Where,
                         {reshape(ctx, kept, {length, 1}), vectors, floatScalar(ctx, 0.0)});
    }
    if (ctx.numInputs() > 6 && !ctx.isNone(6)) {
      if (mode != 0) {
        ctx.unsupported("embedding_bag per_sample_weights with a mode other than 'sum'");
      }
      vectors =
          ctx.emit(ir::OpKind::Mul, {vectors, reshape(ctx, floatTensor(ctx, 6), {length, 1})});
    }
    ir::Value* targets = ctx.emit(ir::OpKind::Broadcast, {reshape(ctx, rows, {length, 1})},
                                  {{"shape", ir::Shape{length, dim}}});
    ir::Value* sums =
        ctx.emit(ir::OpKind::Scatter,
                 {constantFilled(ctx, {ir::DType::Float32, {bags, dim}}, 0.0), targets, vectors},
                 {{"dim", int64_t{0}}, {"reduce", std::string("sum")}});
    if (mode == 1) {
      ir::Value* divisors =
          emitPointwise(ctx, sizes, "clamp", {1.0, std::numeric_limits<double>::infinity()});
      sums = ctx.emit(ir::OpKind::Div, {sums, reshape(ctx, divisors, {bags, 1})});
    }
    ctx.setOutput(0, sums);
  }
  // The bookkeeping outputs of aten::embedding_bag, for PyTorch's own
  // backward (nn.EmbeddingBag returns the first only): each index's bag,
  // each bag's size, and max_indices for max, or the sizes again in their
  // place, as PyTorch's CPU kernel gives them for mean (for sum it leaves
  // them empty unless its backward needs them).
  ir::Value* bagSizes = castTo(ctx, sizes, ir::DType::Int64);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, rows);
  if (ctx.numOutputs() > 2) ctx.setOutput(2, bagSizes);
  if (ctx.numOutputs() > 3) ctx.setOutput(3, mode == 2 ? maxima.rows : bagSizes);
}

// Ops whose output size is the data's: a compiled program cannot have them.
void lowerDataDependentSize(LoweringContext& ctx) {
  ctx.unsupported(ctx.opName() +
                  " (its output's size depends on the data, which a compiled "
                  "program, on an IPU as here, cannot have); compute it on the host, or use a "
                  "fixed-size alternative (a mask with torch.where, topk, one_hot)");
}

} // namespace

void registerSearching(LoweringRegistry& registry) {
  registry.add("aten::bucketize", lowerBucketize);
  registry.add("aten::searchsorted", lowerSearchsorted);
  registry.add("aten::embedding_bag", lowerEmbeddingBag);
  registry.add("aten::_embedding_bag", lowerEmbeddingBag);
  for (const char* op : {"aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_dim",
                         "aten::unique_consecutive", "aten::nonzero", "aten::argwhere"}) {
    registry.add(op, lowerDataDependentSize);
  }
}

} // namespace popsim::frontend::lowerings
