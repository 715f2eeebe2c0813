// Indexing by tensors: index_select, take and put, gather, take_along_dim, scatter (src or
// value), scatter_add, index_add, index_copy, index_fill, advanced indexing
// (x[idx], x[i, j], x[:, idx], with negative indices) and index_put_
// (x[idx] = v, with accumulate), one_hot, on the ops of ir/ops/indexing.cpp,
// and x[mask] = v as a where(). Reading x[mask] gives a shape that depends
// on the data, which a compiled program cannot have: refused with the
// reason, unless the mask is a constant of the trace, whose true elements
// are known (it then indexes by their coordinates, as PyTorch defines it).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <cstring>

namespace popsim::frontend::lowerings {
namespace {

// An index argument as int64 (int32 converted); masks computed at run time refused.
ir::Value* indexTensor(LoweringContext& ctx, ir::Value* index) {
  if (index->type().dtype == ir::DType::Bool) {
    ctx.unsupported("indexing with a boolean mask (the result's shape depends on the data); "
                    "use torch.where(mask, x, other) or multiply by the mask instead (a mask "
                    "that is a constant of the model, such as a torch.tensor([...]) written in "
                    "forward(), indexes as in PyTorch)");
  }
  if (index->type().dtype != ir::DType::Int64 && index->type().dtype != ir::DType::Int32) {
    ctx.unsupported("an index of " + index->type().str() + "; indices are int64 or int32 tensors");
  }
  return castTo(ctx, index, ir::DType::Int64);
}

// Negative indices counted from the end of a dimension of `size`.
ir::Value* wrapped(LoweringContext& ctx, ir::Value* index, int64_t size) {
  ir::Value* zero = constantFilled(ctx, {ir::DType::Int64, {}}, 0.0);
  ir::Value* shifted = emitBinary(
      ctx, "add", index, constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(size)));
  return ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "lt", index, zero), shifted, index});
}

// index_select(self, dim, index) of a 0-d or 1-D index.
void lowerIndexSelect(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), rank);
  ir::Value* index = indexTensor(ctx, ctx.tensor(2));
  if (index->type().rank() > 1) ctx.unsupported("index_select with an index of rank > 1");
  const bool scalar = rank == 0;
  if (scalar) x = reshape(ctx, x, {1});
  ir::Value* y = ctx.emit(ir::OpKind::IndexSelect,
                          {x, reshape(ctx, index, {index->type().numel()})}, {{"dim", dim}});
  ctx.setOutput(0, scalar ? reshape(ctx, y, {}) : y);
}

// An index into a tensor of `count` elements flattened, as take and put
// read it: checked at run time to lie in [-count, count) (the message names
// the op and the index as the model gave it), negative ones counted from
// the end.
ir::Value* flatIndex(LoweringContext& ctx, const char* op, ir::Value* index, int64_t count) {
  const std::string elements = std::to_string(count);
  ir::Value* checked = ctx.emit(
      ir::OpKind::CheckRange, {indexTensor(ctx, index)},
      {{"min", static_cast<double>(-count)},
       {"max", static_cast<double>(count - 1)},
       {"what", std::string(op) + ": every index must be in [-" + elements + ", " + elements +
                    ") for a tensor of " + elements + " elements (PyTorch raises for this too)"}});
  return wrapped(ctx, checked, count);
}

// take(self, index): self's elements, flattened, at index (negative ones
// counted from the end), shaped as index.
void lowerTake(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t count = x->type().numel();
  ir::Value* index = flatIndex(ctx, "take", ctx.tensor(1), count);
  ir::Value* taken = ctx.emit(
      ir::OpKind::Gather, {reshape(ctx, x, {count}), reshape(ctx, index, {index->type().numel()})},
      {{"dim", int64_t{0}}});
  ctx.setOutput(0, reshape(ctx, taken, index->type().shape));
}

// put(self, index, source, accumulate=False): take's counterpart, source's
// elements written (or added) into self's flattened elements at index
// (negative ones counted from the end); with repeated indices and no
// accumulate, PyTorch leaves which write wins unspecified.
void lowerPut(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t count = x->type().numel();
  ir::Value* index = flatIndex(ctx, "put", ctx.tensor(1), count);
  const int64_t written = index->type().numel();
  ir::Value* source = castTo(ctx, ctx.tensor(2), x->type().dtype);
  ir::Value* y = ctx.emit(
      ir::OpKind::IndexAdd,
      {reshape(ctx, x, {count}), reshape(ctx, index, {written}), reshape(ctx, source, {written})},
      {{"dim", int64_t{0}}, {"accumulate", ctx.numInputs() > 3 && ctx.toBool(3)}});
  ctx.setOutput(0, reshape(ctx, y, x->type().shape));
}

// gather(self, dim, index, sparse_grad=False).
void lowerGather(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  ctx.setOutput(0,
                ctx.emit(ir::OpKind::Gather, {x, indexTensor(ctx, ctx.tensor(2))}, {{"dim", dim}}));
}

// take_along_dim(self, indices, dim=None): gather after broadcasting self and
// the indices against each other (except along dim); None flattens both.
void lowerTakeAlongDim(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Value* index = indexTensor(ctx, ctx.tensor(1));
  if (ctx.numInputs() < 3 || ctx.isNone(2)) {
    ir::Value* flat = reshape(ctx, x, {x->type().numel()});
    ctx.setOutput(0,
                  ctx.emit(ir::OpKind::Gather, {flat, reshape(ctx, index, {index->type().numel()})},
                           {{"dim", int64_t{0}}}));
    return;
  }
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), x->type().rank());
  if (index->type().rank() != x->type().rank()) {
    ctx.unsupported("take_along_dim with indices of another rank than the input");
  }
  ir::Shape xShape = x->type().shape, iShape = index->type().shape;
  for (size_t d = 0; d < xShape.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    const int64_t size = std::max(xShape[d], iShape[d]);
    if ((xShape[d] != size && xShape[d] != 1) || (iShape[d] != size && iShape[d] != 1)) {
      ctx.unsupported("take_along_dim with shapes that do not broadcast");
    }
    xShape[d] = iShape[d] = size;
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::Gather,
                            {broadcastTo(ctx, x, xShape), broadcastTo(ctx, index, iShape)},
                            {{"dim", dim}}));
}

// The source of a scatter: a tensor cut to the index's shape (PyTorch reads
// only that corner of it), or a number filled in.
ir::Value* scatterSource(LoweringContext& ctx, size_t sourceIndex, ir::Value* index,
                         ir::DType dtype) {
  if (!ctx.isTensor(sourceIndex)) {
    return constantFilled(ctx, {dtype, index->type().shape}, ctx.toDouble(sourceIndex));
  }
  ir::Value* source = castTo(ctx, ctx.tensor(sourceIndex), dtype);
  if (source->type().rank() == 0) return broadcastTo(ctx, source, index->type().shape);
  if (source->type().rank() != index->type().rank()) {
    ctx.unsupported("a scatter source " + source->type().str() +
                    " of another rank than the index " + index->type().str());
  }
  for (int64_t d = 0; d < source->type().rank(); ++d) {
    const int64_t want = index->type().shape[static_cast<size_t>(d)];
    if (source->type().shape[static_cast<size_t>(d)] < want) {
      ctx.unsupported("a scatter source " + source->type().str() + " smaller than the index " +
                      index->type().str());
    }
    if (source->type().shape[static_cast<size_t>(d)] != want) {
      source = sliceAlong(ctx, source, d, 0, want);
    }
  }
  return source;
}

// scatter(self, dim, index, src|value, reduce=None) and scatter_add(self, dim, index, src).
template <bool Add> void lowerScatter(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  ir::Value* index = indexTensor(ctx, ctx.tensor(2));
  const auto reduceIndex = ctx.argumentIndex("reduce");
  const bool reduced = reduceIndex.has_value() && !ctx.isNone(*reduceIndex);
  if (reduced && ctx.toString(*reduceIndex) != "add") {
    ctx.unsupported("scatter with reduce='" + ctx.toString(*reduceIndex) +
                    "'; popsim reduces with 'add' (or use scatter_add)");
  }
  ir::Value* source = scatterSource(ctx, 3, index, x->type().dtype);
  ir::Value* y = ctx.emit(ir::OpKind::Scatter, {x, index, source},
                          {{"dim", dim}, {"reduce", std::string(Add || reduced ? "sum" : "none")}});
  if (reduced) { // PyTorch has no derivative for scatter with a reduce argument
    y = ctx.emit(ir::OpKind::NoDerivative, {y},
                 {{"what", std::string("scatter with reduce='add'")},
                  {"hint", std::string("Use scatter_add, which has one.")}});
  }
  ctx.setOutput(0, y);
}

// scatter_reduce(self, dim, index, src, reduce, include_self=True) and
// index_reduce(self, dim, index, source, reduce, include_self=True), the
// latter's slice index spread to an element index.
template <bool Slices> void lowerScatterReduce(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  ir::Value* index = indexTensor(ctx, ctx.tensor(2));
  ir::Value* source = floatTensor(ctx, 3);
  if (Slices) { // index [K] along dim -> an element index of the source's shape
    if (index->type().rank() != 1) ctx.unsupported("index_reduce with an index that is not 1-D");
    ir::Shape along(static_cast<size_t>(source->type().rank()), 1);
    along[static_cast<size_t>(dim)] = index->type().shape[0];
    index = broadcastTo(ctx, reshape(ctx, index, along), source->type().shape);
  } else {
    source = scatterSource(ctx, 3, index, x->type().dtype);
  }
  std::string reduce = ctx.toString(4);
  if (reduce == "multiply") reduce = "prod"; // index_reduce's name for it
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" &&
      reduce != "amin") {
    ctx.unsupported("reduce='" + reduce + "'; it takes 'sum', 'prod', 'mean', 'amax' or 'amin'");
  }
  const bool includeSelf = ctx.numInputs() > 5 ? ctx.toBool(5) : true;
  ctx.setOutput(0, ctx.emit(ir::OpKind::ScatterReduce, {x, index, source},
                            {{"dim", dim}, {"reduce", reduce}, {"include_self", includeSelf}}));
}

// index_add(self, dim, index, source, alpha=1), index_copy(self, dim, index,
// source) and index_fill(self, dim, index, value).
enum class IndexWrite { Add, Copy, Fill };

template <IndexWrite Write> void lowerIndexWrite(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  ir::Value* index = indexTensor(ctx, ctx.tensor(2));
  index = reshape(ctx, index, {index->type().numel()});
  ir::Shape sliceShape = x->type().shape;
  sliceShape[static_cast<size_t>(dim)] = index->type().shape[0];
  ir::Value* source = nullptr;
  if (Write == IndexWrite::Fill) {
    source = broadcastTo(ctx, operandAs(ctx, 3, x->type().dtype), sliceShape);
  } else {
    source = castTo(ctx, ctx.tensor(3), x->type().dtype);
    if (Write == IndexWrite::Add && ctx.numInputs() > 4 && ctx.toDouble(4) != 1.0) {
      source = affine(ctx, source, ctx.toDouble(4), 0.0);
    }
    source = reshape(ctx, source, sliceShape);
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::IndexAdd, {x, index, source},
                            {{"dim", dim}, {"accumulate", Write == IndexWrite::Add}}));
}

// Advanced indexing on the dims with index tensors: x moved to [indexed
// dims..., other dims...] with the indexed dims flattened into one, and the
// index tensors (broadcast, negatives wrapped) combined into positions in it.
struct Flattened {
  ir::Value* x;               // [product of the indexed sizes, other dims...]
  ir::Value* positions;       // [number of index elements]
  ir::Shape indexShape;       // the broadcast shape of the index tensors
  std::vector<int64_t> perm;  // how x was permuted
  std::vector<int64_t> other; // the dims without an index, in order
  int64_t front = 0;          // where the indexed dims' result goes (0 unless adjacent)
};

Flattened flattenIndexed(LoweringContext& ctx, ir::Value* x,
                         const std::vector<ir::Value*>& indices) {
  const ir::Shape& shape = x->type().shape;
  if (indices.size() > shape.size()) ctx.unsupported("more indices than the tensor has dimensions");
  Flattened f;
  std::vector<int64_t> indexed;
  std::vector<ir::Value*> tensors;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < indices.size() && indices[d] != nullptr) {
      indexed.push_back(static_cast<int64_t>(d));
      tensors.push_back(indexTensor(ctx, indices[d]));
    } else {
      f.other.push_back(static_cast<int64_t>(d));
    }
  }
  if (indexed.empty()) ctx.unsupported("indexing without an index tensor");
  f.indexShape = tensors[0]->type().shape;
  for (ir::Value* t : tensors) {
    const auto both = ir::broadcastShapes(f.indexShape, t->type().shape);
    if (!both) ctx.unsupported("index tensors that do not broadcast together");
    f.indexShape = *both;
  }
  const bool adjacent =
      indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  f.front = adjacent ? indexed.front() : 0;
  // positions = sum over indexed dims of wrapped index x stride in the flattened block
  ir::Value* positions = nullptr;
  int64_t stride = 1;
  for (size_t k = indexed.size(); k-- > 0;) {
    const int64_t size = shape[static_cast<size_t>(indexed[k])];
    ir::Value* term = broadcastTo(ctx, wrapped(ctx, tensors[k], size), f.indexShape);
    if (stride != 1) {
      term = emitBinary(ctx, "mul", term,
                        constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(stride)));
    }
    positions = positions == nullptr ? term : emitBinary(ctx, "add", positions, term);
    stride *= size;
  }
  f.positions = reshape(ctx, positions, {ir::elementCount(f.indexShape)});
  f.perm = indexed;
  f.perm.insert(f.perm.end(), f.other.begin(), f.other.end());
  ir::Value* moved = std::is_sorted(f.perm.begin(), f.perm.end()) ? x : permute(ctx, x, f.perm);
  ir::Shape flat = {stride};
  for (int64_t d : f.other)
    flat.push_back(shape[static_cast<size_t>(d)]);
  f.x = reshape(ctx, moved, flat);
  return f;
}

// The order of [index dims..., other dims...] that puts the index dims at `front`.
std::vector<int64_t> resultOrder(const Flattened& f) {
  const int64_t indexRank = static_cast<int64_t>(f.indexShape.size());
  const int64_t others = static_cast<int64_t>(f.other.size());
  std::vector<int64_t> order;
  for (int64_t i = 0; i < f.front; ++i)
    order.push_back(indexRank + i);
  for (int64_t i = 0; i < indexRank; ++i)
    order.push_back(i);
  for (int64_t i = f.front; i < others; ++i)
    order.push_back(indexRank + i);
  return order;
}

// A boolean mask known at compile time (a constant of the trace) selects
// known elements: as in PyTorch, x[mask] is x indexed by the coordinates of
// the mask's true elements, one int64 index tensor per dim the mask covers.
// `uint8`: an int32 constant that the trace saw as a uint8 mask.
std::vector<ir::Value*> coordinatesOfConstantMask(LoweringContext& ctx, const ir::Value* mask,
                                                  bool uint8) {
  const ir::TensorType& type = mask->type();
  const std::vector<uint8_t>& bytes = mask->constantData();
  const auto selected = [&](int64_t i) {
    if (!uint8) return bytes[static_cast<size_t>(i)] != 0;
    int32_t value = 0;
    std::memcpy(&value, bytes.data() + static_cast<size_t>(i) * sizeof(int32_t), sizeof(value));
    return value != 0;
  };
  const int64_t rank = type.rank();
  std::vector<std::vector<int64_t>> coordinates(static_cast<size_t>(rank));
  for (int64_t i = 0; i < type.numel(); ++i) {
    if (!selected(i)) continue;
    int64_t rest = i;
    for (int64_t d = rank; d-- > 0;) {
      const int64_t size = type.shape[static_cast<size_t>(d)];
      coordinates[static_cast<size_t>(d)].push_back(rest % size);
      rest /= size;
    }
  }
  std::vector<ir::Value*> tensors;
  for (const auto& along : coordinates) {
    tensors.push_back(int64Constant(ctx, along));
  }
  return tensors;
}

// The index tensors of list argument `index`, uint8 ones as the boolean
// masks eager PyTorch reads them as (it warns that uint8 masks are
// deprecated); they arrive as int32, the host having widened them. Constant
// masks become the coordinates they select.
std::vector<ir::Value*> indexTensors(LoweringContext& ctx, size_t index) {
  const std::vector<ir::Value*> given = ctx.optionalTensorList(index);
  const std::vector<bool> uint8 = ctx.uint8ListElements(index);
  std::vector<ir::Value*> indices;
  for (size_t i = 0; i < given.size(); ++i) {
    ir::Value* t = given[i];
    const bool uint8Mask = t != nullptr && i < uint8.size() && uint8[i];
    const bool mask = t != nullptr && (uint8Mask ? t->type().dtype == ir::DType::Int32
                                                 : t->type().dtype == ir::DType::Bool);
    if (mask && t->role() == ir::ValueRole::Constant && t->type().rank() > 0) {
      for (ir::Value* coordinate : coordinatesOfConstantMask(ctx, t, uint8Mask))
        indices.push_back(coordinate);
      continue;
    }
    if (uint8Mask) t = emitBinary(ctx, "ne", t, constantFilled(ctx, {t->type().dtype, {}}, 0));
    indices.push_back(t);
  }
  return indices;
}

// aten::index(self, indices): x[i], x[i, j], x[:, i], x[i, None]... with tensor indices.
void lowerIndex(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const Flattened f = flattenIndexed(ctx, x, indexTensors(ctx, 1));
  ir::Value* picked = ctx.emit(ir::OpKind::IndexSelect, {f.x, f.positions}, {{"dim", int64_t{0}}});
  ir::Shape shape = f.indexShape;
  for (int64_t d : f.other)
    shape.push_back(x->type().shape[static_cast<size_t>(d)]);
  ir::Value* y = reshape(ctx, picked, shape);
  const std::vector<int64_t> order = resultOrder(f);
  if (!std::is_sorted(order.begin(), order.end())) y = permute(ctx, y, order);
  ctx.setOutput(0, y);
}

// Rows of `rows` [N, R] laid out along a flat mask [M]: the k-th true
// position of the mask gets row k (a running count of the mask finds it),
// false positions an unused row; [M, R]. The count is checked at run time
// against N, with `what` as the message: at most N, or exactly N (`exact`).
ir::Value* takenInOrder(LoweringContext& ctx, ir::Value* mask, ir::Value* rows, bool exact,
                        const std::string& what) {
  const int64_t available = rows->type().shape[0];
  const int64_t positions = mask->type().shape[0];
  ir::Value* taken = ctx.emit(ir::OpKind::CumulativeSum, {castTo(ctx, mask, ir::DType::Int64)},
                              {{"dim", int64_t{0}}, {"reverse", false}});
  taken = ctx.emit(
      ir::OpKind::CheckRange, {taken},
      {{"min", 0.0}, {"max", static_cast<double>(available)}, {"what", std::string(what)}});
  if (exact && positions > 0) {
    ir::Value* total = sliceAlong(ctx, taken, 0, positions - 1, positions);
    ir::Value* checked = ctx.emit(ir::OpKind::CheckRange, {total},
                                  {{"min", static_cast<double>(available)},
                                   {"max", static_cast<double>(available)},
                                   {"what", std::string(what)}});
    // Dead-code elimination drops an op nothing reads: the check's result is
    // added to the count times zero, so that the positions depend on it.
    taken =
        emitBinary(ctx, "add", taken,
                   emitBinary(ctx, "mul", checked, constantFilled(ctx, {ir::DType::Int64, {}}, 0)));
  }
  ir::Value* position = emitBinary(ctx, "maximum", affine(ctx, taken, 1.0, -1.0),
                                   constantFilled(ctx, {ir::DType::Int64, {}}, 0.0));
  return ctx.emit(ir::OpKind::IndexSelect, {rows, position}, {{"dim", int64_t{0}}});
}

// masked_scatter(self, mask, source): self where the mask (broadcast to self)
// is false; where it is true, source's elements in row-major order, as a
// multimodal model puts image features into a token sequence's embeddings
// (eager refuses a mask with more true elements than source has, and so,
// at run time, does popsim).
void lowerMaskedScatter(LoweringContext& ctx) {
  ir::Value* self = ctx.tensor(0);
  const ir::Shape shape = self->type().shape;
  const int64_t count = self->type().numel();
  ir::Value* mask =
      reshape(ctx, broadcastTo(ctx, castTo(ctx, ctx.tensor(1), ir::DType::Bool), shape), {count});
  ir::Value* source = ctx.tensor(2);
  const int64_t available = source->type().numel();
  ir::Value* taken =
      takenInOrder(ctx, mask, reshape(ctx, source, {available, 1}), false,
                   "masked_scatter: the mask has more true elements than source has elements (" +
                       std::to_string(available) +
                       "); give source at least as many elements as the mask can select");
  ir::Value* result = ctx.emit(ir::OpKind::Where,
                               {mask, reshape(ctx, taken, {count}), reshape(ctx, self, {count})});
  ctx.setOutput(0, inPlaceResult(ctx, reshape(ctx, result, shape)));
}

// x[mask] = values (or += with accumulate): a where(), since the values
// broadcast over however many elements the mask selects. A mask of rank k
// at index position p covers x's dims p .. p + k - 1. Values with a size of
// their own along the selected elements (one per element) are laid out in
// order by takenInOrder when the mask comes first (x[mask] = rows); after
// other dims they are refused.
ir::Value* maskedPut(LoweringContext& ctx, ir::Value* x, const std::vector<ir::Value*>& indices,
                     bool accumulate) {
  size_t at = indices.size();
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == nullptr) continue;
    if (at != indices.size() || indices[i]->type().dtype != ir::DType::Bool) {
      ctx.unsupported("x[...] = values with a boolean mask and other index tensors; index with "
                      "the mask alone (x[mask] = v) or use torch.where");
    }
    at = i;
  }
  ir::Value* mask = indices[at];
  const ir::Shape& shape = x->type().shape;
  const size_t covered = static_cast<size_t>(mask->type().rank());
  if (at + covered > shape.size() ||
      !std::equal(mask->type().shape.begin(), mask->type().shape.end(), shape.begin() + at)) {
    ctx.unsupported("a boolean mask " + mask->type().str() + " at dim " + std::to_string(at) +
                    " of a tensor " + x->type().str() +
                    "; the mask's shape must be the shape of the dims it covers");
  }
  ir::Value* values = castTo(ctx, ctx.tensor(2), x->type().dtype);
  // values broadcast against [x dims before, selected, x dims after]
  const size_t resultRank = shape.size() - covered + 1;
  ir::Shape vs = values->type().shape;
  if (vs.size() > resultRank) {
    ctx.unsupported("values " + values->type().str() + " of higher rank than x[mask] (" +
                    std::to_string(resultRank) + ")");
  }
  vs.insert(vs.begin(), resultRank - vs.size(), 1);
  if (vs[at] != 1 && at == 0) {
    // Each selected element (or row, the mask covering x's leading dims) gets its own
    // value, in order: values holds as many as the mask selects, checked at run time.
    const int64_t selectable = mask->type().numel();
    const int64_t width = x->type().numel() / std::max<int64_t>(selectable, 1);
    ir::Shape rowShape(shape.begin() + static_cast<std::ptrdiff_t>(covered), shape.end());
    rowShape.insert(rowShape.begin(), vs[0]);
    ir::Value* rows =
        reshape(ctx, broadcastTo(ctx, reshape(ctx, values, vs), rowShape), {vs[0], width});
    ir::Value* flatMask = reshape(ctx, mask, {selectable});
    ir::Value* placed = takenInOrder(
        ctx, flatMask, rows, true,
        "x[mask] = values: the mask selects another number of elements than values has (" +
            std::to_string(vs[0]) + " along its first dim); give values one per selected element");
    ir::Value* keep = reshape(ctx, flatMask, {selectable, 1});
    ir::Value* flatX = reshape(ctx, x, {selectable, width});
    ir::Value* result =
        accumulate
            ? emitBinary(ctx, "add", flatX,
                         ctx.emit(ir::OpKind::Where,
                                  {keep, placed, constantFilled(ctx, {x->type().dtype, {}}, 0.0)}))
            : ctx.emit(ir::OpKind::Where, {keep, placed, flatX});
    return reshape(ctx, result, shape);
  }
  if (vs[at] != 1) {
    ctx.unsupported("x[..., mask] = values with values " + values->type().str() +
                    " that give each selected element its own value, after other dims; index "
                    "with the mask first (x[mask] = values) or use torch.where(mask, values, x)");
  }
  ir::Shape spread(vs.begin(), vs.begin() + static_cast<std::ptrdiff_t>(at));
  spread.insert(spread.end(), covered, 1);
  spread.insert(spread.end(), vs.begin() + static_cast<std::ptrdiff_t>(at) + 1, vs.end());
  ir::Shape maskShape(at, 1);
  maskShape.insert(maskShape.end(), mask->type().shape.begin(), mask->type().shape.end());
  maskShape.resize(shape.size(), 1);
  mask = reshape(ctx, mask, maskShape);
  values = reshape(ctx, values, spread);
  if (!accumulate) return ctx.emit(ir::OpKind::Where, {mask, values, x});
  ir::Value* zero = constantFilled(ctx, {x->type().dtype, {}}, 0.0);
  return emitBinary(ctx, "add", x, ctx.emit(ir::OpKind::Where, {mask, values, zero}));
}

// aten::index_put(self, indices, values, accumulate=False) and index_put_:
// the values (broadcast to the indexed result's shape) written over or added
// into the indexed elements.
void lowerIndexPut(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const std::vector<ir::Value*> indices = indexTensors(ctx, 1);
  const bool accumulate = ctx.numInputs() > 3 && ctx.toBool(3);
  if (std::any_of(indices.begin(), indices.end(), [](ir::Value* index) {
        return index != nullptr && index->type().dtype == ir::DType::Bool;
      })) {
    ctx.setOutput(0, maskedPut(ctx, x, indices, accumulate));
    return;
  }
  const Flattened f = flattenIndexed(ctx, x, indices);
  // The values in the indexed result's layout, then in [index elements, other dims...].
  ir::Shape indexedResult = f.indexShape;
  for (int64_t d : f.other)
    indexedResult.push_back(x->type().shape[static_cast<size_t>(d)]);
  const std::vector<int64_t> order = resultOrder(f);
  ir::Shape resultShape;
  for (int64_t o : order)
    resultShape.push_back(indexedResult[static_cast<size_t>(o)]);
  ir::Value* values = castTo(ctx, ctx.tensor(2), x->type().dtype);
  values = broadcastTo(ctx, values, resultShape);
  if (!std::is_sorted(order.begin(), order.end())) {
    values = permute(ctx, values, ir::inversePermutation(order));
  }
  ir::Shape rows = f.x->type().shape;
  rows[0] = f.positions->type().shape[0];
  values = reshape(ctx, values, rows);
  ir::Value* written = ctx.emit(ir::OpKind::IndexAdd, {f.x, f.positions, values},
                                {{"dim", int64_t{0}}, {"accumulate", accumulate}});
  // Back to x's layout: unflatten, then undo the permutation.
  ir::Shape moved;
  for (int64_t d : f.perm)
    moved.push_back(x->type().shape[static_cast<size_t>(d)]);
  ir::Value* y = reshape(ctx, written, moved);
  if (!std::is_sorted(f.perm.begin(), f.perm.end())) {
    y = permute(ctx, y, ir::inversePermutation(f.perm));
  }
  ctx.setOutput(0, y);
}

// bincount(self, weights=None, minlength=0): its length, max(self) + 1 or
// minlength, depends on the data, which a compiled program's shapes cannot.
// With minlength n the program counts into n bins and checks at run time
// that every value is in [0, n) (an ExecutionError otherwise), so its result
// is eager's whenever that holds; without minlength it is refused.
void lowerBincount(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const std::optional<size_t> minlengthArgument = ctx.argumentIndex("minlength");
  const int64_t bins = minlengthArgument.has_value() ? ctx.toInt(*minlengthArgument) : 0;
  if (bins <= 0) {
    ctx.unsupported("bincount without minlength (its length, the largest value + 1, depends "
                    "on the data); pass minlength=n with every value below n (popsim then "
                    "counts into n bins and checks the values at run time)");
  }
  if (x->type().rank() != 1 || ir::isFloat(x->type().dtype)) {
    ctx.unsupported("bincount of a " + x->type().str() +
                    " tensor; it counts a 1-D tensor "
                    "of non-negative integers");
  }
  ir::Value* index =
      ctx.emit(ir::OpKind::CheckRange, {castTo(ctx, x, ir::DType::Int64)},
               {{"min", 0.0},
                {"max", static_cast<double>(bins - 1)},
                {"what", "bincount: every value must be at least 0 and below minlength (" +
                             std::to_string(bins) +
                             "), the number of bins popsim compiled; pass a larger minlength"}});
  const std::optional<size_t> weightsArgument = ctx.argumentIndex("weights");
  ir::Value* source = nullptr;
  if (weightsArgument.has_value() && !ctx.isNone(*weightsArgument)) {
    source = ctx.tensor(*weightsArgument);
    if (!ir::isFloat(source->type().dtype)) {
      ctx.unsupported("bincount with " + source->type().str() +
                      " weights; popsim sums float weights (convert them with .float())");
    }
    // PyTorch sums float32 weights in float32 and others in float64, which
    // popsim computes in float32 (as PopTorch does).
    source = castTo(ctx, source, ir::DType::Float32);
  } else {
    source = constantFilled(ctx, {ir::DType::Int64, x->type().shape}, 1.0);
  }
  ir::Value* counts = ctx.emit(ir::OpKind::IndexAdd,
                               {constantFilled(ctx, {source->type().dtype, {bins}}, 0.0), index,
                                reshape(ctx, source, {x->type().numel()})},
                               {{"dim", int64_t{0}}, {"accumulate", true}});
  // As in PyTorch, which has no derivative for bincount's weights.
  ctx.setOutput(0, ctx.emit(ir::OpKind::NoDerivative, {counts},
                            {{"what", std::string("bincount with weights")},
                             {"hint", std::string("Sum the weights with index_add or "
                                                  "scatter_add, which have one.")}}));
}

// one_hot(self, num_classes): int64 [..., num_classes], a 1 scattered into
// zeros at each index (which checks it is in range, as PyTorch does);
// num_classes=-1 (the largest index + 1) depends on the data and is refused.
void lowerOneHot(LoweringContext& ctx) {
  ir::Value* index = indexTensor(ctx, ctx.tensor(0));
  const int64_t classes = ctx.numInputs() > 1 ? ctx.toInt(1) : -1;
  if (classes < 0) {
    ctx.unsupported("OneHot num classes must be specified and must be constant: one_hot "
                    "without num_classes (the number of classes would depend on the data); pass "
                    "num_classes");
  }
  ir::Shape positions = index->type().shape;
  positions.push_back(1);
  ir::Shape shape = index->type().shape;
  shape.push_back(classes);
  ctx.setOutput(0, ctx.emit(ir::OpKind::Scatter,
                            {constantFilled(ctx, {ir::DType::Int64, shape}, 0.0),
                             reshape(ctx, index, positions),
                             constantFilled(ctx, {ir::DType::Int64, positions}, 1.0)},
                            {{"dim", static_cast<int64_t>(positions.size()) - 1},
                             {"reduce", std::string("none")}}));
}

// masked_select: its result's size is the number of true elements.
void lowerMaskedSelect(LoweringContext& ctx) {
  ctx.unsupported("masked_select (the result's size depends on the data, which a compiled "
                  "program cannot have, as on an IPU); use torch.where(mask, x, 0) instead");
}

} // namespace

void registerIndexing(LoweringRegistry& registry) {
  registry.add("aten::index_select", lowerIndexSelect);
  registry.add("aten::masked_scatter", lowerMaskedScatter);
  registry.add("aten::masked_scatter_", lowerMaskedScatter);
  registry.add("aten::bincount", lowerBincount);
  // popsim.dynamic_slice / dynamic_update while tracing (python/popsim/_tensor_ops.py).
  registry.add("popsim::dynamic_select", lowerIndexSelect);
  registry.add("aten::gather", lowerGather);
  registry.add("aten::take", lowerTake);
  registry.addWithInPlace("aten::put", lowerPut);
  registry.add("aten::take_along_dim", lowerTakeAlongDim);
  registry.addWithInPlace("aten::scatter", lowerScatter<false>);
  registry.addWithInPlace("aten::scatter_add", lowerScatter<true>);
  registry.addWithInPlace("aten::index_add", lowerIndexWrite<IndexWrite::Add>);
  registry.addWithInPlace("aten::index_copy", lowerIndexWrite<IndexWrite::Copy>);
  registry.addWithInPlace("aten::index_fill", lowerIndexWrite<IndexWrite::Fill>);
  registry.addWithInPlace("aten::index_put", lowerIndexPut);
  registry.addWithInPlace("aten::scatter_reduce", lowerScatterReduce<false>);
  registry.addWithInPlace("aten::index_reduce", lowerScatterReduce<true>);
  registry.add("popsim::dynamic_copy", lowerIndexWrite<IndexWrite::Copy>);
  registry.add("aten::index", lowerIndex);
  registry.add("aten::one_hot", lowerOneHot);
  registry.add("aten::masked_select", lowerMaskedSelect);
}

} // namespace popsim::frontend::lowerings
