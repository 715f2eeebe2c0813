#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <limits>
#include <string>

namespace popsim::frontend::lowerings {
namespace {

// view / reshape(input, shape) with one dimension possibly -1.
void lowerView(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> shape = ctx.toIntList(1);
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) ctx.unsupported("more than one -1 in the target shape");
      inferred = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x->type().numel() % known != 0) {
      ctx.unsupported("cannot infer the -1 dimension when reshaping " + x->type().str());
    }
    shape[static_cast<size_t>(inferred)] = x->type().numel() / known;
  }
  ctx.setOutput(0, reshape(ctx, x, shape));
}

// flatten(input, start_dim=0, end_dim=-1)
void lowerFlatten(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape& in = x->type().shape;
  if (in.empty()) {
    ctx.setOutput(0, reshape(ctx, x, {1}));
    return;
  }
  const int64_t rank = x->type().rank();
  const int64_t start = normalizedDim(ctx, ctx.toInt(1), rank);
  const int64_t end = normalizedDim(ctx, ctx.toInt(2), rank);
  ir::Shape out(in.begin(), in.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d)
    merged *= in[d];
  out.push_back(merged);
  out.insert(out.end(), in.begin() + end + 1, in.end());
  ctx.setOutput(0, reshape(ctx, x, out));
}

// ravel(input): the elements as a vector.
void lowerRavel(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ctx.setOutput(0, reshape(ctx, x, {x->type().numel()}));
}

void lowerUnsqueeze(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Shape shape = x->type().shape;
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank() + 1);
  shape.insert(shape.begin() + dim, 1);
  ctx.setOutput(0, reshape(ctx, x, shape));
}

// squeeze(input) drops all size-1 dimensions, squeeze(input, dim) just one.
void lowerSqueeze(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Shape shape = x->type().shape;
  if (ctx.numInputs() == 1) {
    shape.erase(std::remove(shape.begin(), shape.end(), 1), shape.end());
  } else if (!shape.empty()) {
    const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
    if (shape[dim] == 1) shape.erase(shape.begin() + dim);
  }
  ctx.setOutput(0, reshape(ctx, x, shape));
}

void lowerPermute(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> perm = ctx.toIntList(1);
  for (int64_t& dim : perm)
    dim = normalizedDim(ctx, dim, x->type().rank());
  ctx.setOutput(0, permute(ctx, x, perm));
}

void lowerTranspose(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  if (rank < 2) {
    ctx.setOutput(0, x);
    return;
  }
  const int64_t first = normalizedDim(ctx, ctx.toInt(1), rank);
  const int64_t second = normalizedDim(ctx, ctx.toInt(2), rank);
  if (first == second) { // the tensor itself (x.transpose_(1, 1) changes nothing)
    ctx.setOutput(0, x);
    return;
  }
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[i] = i;
  std::swap(perm[static_cast<size_t>(first)], perm[static_cast<size_t>(second)]);
  ctx.setOutput(0, permute(ctx, x, perm));
}

ir::Value* slice(LoweringContext& ctx, ir::Value* x, int64_t dim, int64_t start, int64_t end,
                 int64_t step) {
  return ctx.emit(ir::OpKind::Slice, {x},
                  {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}

// Python slice bounds: negative counts from the end, out-of-range clamps.
int64_t clampIndex(int64_t index, int64_t size) {
  if (index < 0) index += size;
  return std::clamp<int64_t>(index, 0, size);
}

// slice(input, dim=0, start=None, end=None, step=1)
void lowerSlice(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  const int64_t size = x->type().shape[dim];
  const int64_t start = ctx.isNone(2) ? 0 : clampIndex(ctx.toInt(2), size);
  const int64_t end = ctx.isNone(3) ? size : clampIndex(ctx.toInt(3), size);
  const int64_t step = ctx.toInt(4);
  if (step < 1) ctx.unsupported("slice step " + std::to_string(step));
  ctx.setOutput(0, slice(ctx, x, dim, start, std::max(start, end), step));
}

// narrow(input, dim, start, length)
void lowerNarrow(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  const int64_t start = clampIndex(ctx.toInt(2), x->type().shape[dim]);
  ctx.setOutput(0, slice(ctx, x, dim, start, start + ctx.toInt(3), 1));
}

// select(input, dim, index): a slice of one, with the dimension removed.
void lowerSelect(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), x->type().rank());
  const int64_t size = x->type().shape[dim];
  int64_t index = ctx.toInt(2);
  if (index < -size || index >= size) {
    ctx.unsupported("index " + std::to_string(index) + " is out of range for size " +
                    std::to_string(size));
  }
  if (index < 0) index += size;
  ir::Shape shape = x->type().shape;
  shape.erase(shape.begin() + dim);
  ctx.setOutput(0, reshape(ctx, slice(ctx, x, dim, index, index + 1, 1), shape));
}

// select_scatter(self, src, dim, index) and slice_scatter(self, src, dim=0,
// start=None, end=None, step=1): self with that select or slice replaced
// by src (of its shape; eager checked), as an in-place write through the
// view would leave it.
void lowerSelectOrSliceScatter(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Value* src = castTo(ctx, ctx.tensor(1), x->type().dtype);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), x->type().rank());
  const int64_t size = x->type().shape[dim];
  int64_t start = 0, end = size, step = 1;
  if (ctx.opName() == "aten::select_scatter") {
    start = ctx.toInt(3);
    if (start < -size || start >= size) {
      ctx.unsupported("select_scatter at index " + std::to_string(start) +
                      ", out of range for size " + std::to_string(size));
    }
    if (start < 0) start += size;
    end = start + 1;
    ir::Shape shape = src->type().shape;
    shape.insert(shape.begin() + dim, 1);
    src = reshape(ctx, src, shape);
  } else {
    start = ctx.isNone(3) ? 0 : clampIndex(ctx.toInt(3), size);
    end = std::max(start, ctx.isNone(4) ? size : clampIndex(ctx.toInt(4), size));
    step = ctx.toInt(5);
    if (step < 1) ctx.unsupported("slice_scatter step " + std::to_string(step));
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::SliceUpdate, {x, src},
                            {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}}));
}

// Splits along `dim` into pieces of the given sizes, as a list output.
void splitInto(LoweringContext& ctx, ir::Value* x, int64_t dim, const std::vector<int64_t>& sizes) {
  std::vector<ir::Value*> pieces;
  int64_t start = 0;
  for (int64_t size : sizes) {
    pieces.push_back(slice(ctx, x, dim, start, start + size, 1));
    start += size;
  }
  ctx.setOutputList(0, pieces);
}

// chunk(input, chunks, dim): ceil(size / chunks) per piece, the last one smaller.
void lowerChunk(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), x->type().rank());
  const int64_t size = x->type().shape[dim];
  const int64_t chunks = ctx.toInt(1);
  const int64_t piece = (size + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < size; start += piece)
    sizes.push_back(std::min(piece, size - start));
  splitInto(ctx, x, dim, sizes);
}

// split(input, split_size or sizes, dim)
void lowerSplit(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), x->type().rank());
  const int64_t size = x->type().shape[dim];
  std::vector<int64_t> sizes = ctx.toIntList(1);
  if (sizes.size() == 1 && ctx.opName() != "aten::split_with_sizes" && ctx.staticScalar(1)) {
    const int64_t piece = sizes[0];
    sizes.clear();
    for (int64_t start = 0; start < size; start += piece)
      sizes.push_back(std::min(piece, size - start));
  }
  splitInto(ctx, x, dim, sizes);
}

// cat(tensors, dim)
void lowerCat(LoweringContext& ctx) {
  std::vector<ir::Value*> tensors = withCommonDType(ctx, ctx.tensorList(0));
  if (tensors.empty()) ctx.unsupported("cat of an empty list");
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), tensors[0]->type().rank());
  ctx.setOutput(0, tensors.size() == 1 ? tensors[0]
                                       : ctx.emit(ir::OpKind::Concat, tensors, {{"dim", dim}}));
}

// stack(tensors, dim): unsqueeze each at dim, then cat.
void lowerStack(LoweringContext& ctx) {
  std::vector<ir::Value*> tensors = withCommonDType(ctx, ctx.tensorList(0));
  if (tensors.empty()) ctx.unsupported("stack of an empty list");
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), tensors[0]->type().rank() + 1);
  for (ir::Value*& t : tensors) {
    ir::Shape shape = t->type().shape;
    shape.insert(shape.begin() + dim, 1);
    t = reshape(ctx, t, shape);
  }
  ctx.setOutput(0, tensors.size() == 1 ? tensors[0]
                                       : ctx.emit(ir::OpKind::Concat, tensors, {{"dim", dim}}));
}

// The NumPy-style stacks: a cat along Dim of the tensors raised to rank Rank
// as atleast_1d / 2d / 3d raise them. hstack (Rank 1, Dim 1) joins vectors
// along their only dim; column_stack first makes scalars and vectors
// columns; vstack (row_stack) joins along dim 0, dstack along dim 2. Eager
// checked the shapes while tracing.
template <size_t Rank, int64_t Dim> void lowerStackAlong(LoweringContext& ctx) {
  std::vector<ir::Value*> tensors = withCommonDType(ctx, ctx.tensorList(0));
  if (tensors.empty()) ctx.unsupported(ctx.opName() + " of an empty list");
  const bool columns = ctx.opName() == "aten::column_stack";
  for (ir::Value*& t : tensors) {
    t = columns && t->type().rank() < 2 ? reshape(ctx, t, {t->type().numel(), 1})
                                        : atLeastRank(ctx, t, Rank);
  }
  const int64_t dim = tensors[0]->type().rank() == 1 ? 0 : Dim;
  ctx.setOutput(0, tensors.size() == 1 ? tensors[0]
                                       : ctx.emit(ir::OpKind::Concat, tensors, {{"dim", dim}}));
}

// broadcast_tensors(tensors): each broadcast to their common shape.
void lowerBroadcastTensors(LoweringContext& ctx) {
  std::vector<ir::Value*> tensors = ctx.tensorList(0);
  ir::Shape shape;
  for (ir::Value* t : tensors) {
    auto common = ir::broadcastShapes(shape, t->type().shape);
    if (!common) ctx.unsupported("tensors whose shapes do not broadcast");
    shape = *common;
  }
  for (ir::Value*& t : tensors)
    t = broadcastTo(ctx, t, shape);
  ctx.setOutputList(0, tensors);
}

// meshgrid(tensors, indexing="ij"): 0-d or 1-D tensors t_0..t_{n-1} as n
// grids of shape [len(t_0), ..., len(t_{n-1})], grid i varying along dim i;
// "xy" indexing swaps the first two dims, as numpy does.
void lowerMeshgrid(LoweringContext& ctx) {
  std::vector<ir::Value*> tensors = ctx.tensorList(0);
  const std::string indexing = ctx.numInputs() > 1 && !ctx.isNone(1) ? ctx.toString(1) : "ij";
  if (indexing != "ij" && indexing != "xy") {
    ctx.unsupported("meshgrid indexing '" + indexing + "'; it is 'ij' or 'xy'");
  }
  const bool xy = indexing == "xy" && tensors.size() >= 2;
  ir::Shape shape;
  for (ir::Value* t : tensors) {
    if (t->type().rank() > 1) ctx.unsupported("meshgrid of a tensor of rank above 1");
    shape.push_back(t->type().numel());
  }
  if (xy) std::swap(shape[0], shape[1]);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t dim = xy && i < 2 ? 1 - i : i;
    ir::Shape along(shape.size(), 1);
    along[dim] = shape[dim];
    tensors[i] = broadcastTo(ctx, reshape(ctx, tensors[i], along), shape);
  }
  ctx.setOutputList(0, tensors);
}

// expand(input, size, implicit): -1 keeps a dimension; new leading dimensions may be added.
void lowerExpand(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> size = ctx.toIntList(1);
  const ir::Shape& in = x->type().shape;
  if (size.size() < in.size()) ctx.unsupported("expand to fewer dimensions than the input has");
  const size_t offset = size.size() - in.size();
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      if (i < offset) ctx.unsupported("expand with -1 in a new leading dimension");
      size[i] = in[i - offset];
    }
  }
  ctx.setOutput(0, broadcastTo(ctx, x, size));
}

// view_as(input, other) and reshape_as(input, other): input in other's shape
void lowerViewAs(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape& shape = ctx.tensor(1)->type().shape;
  if (ir::elementCount(shape) != x->type().numel()) {
    ctx.unsupported("viewing " + x->type().str() + " in the shape " + ir::shapeToString(shape) +
                    " of a tensor with another number of elements (PyTorch raises here too)");
  }
  ctx.setOutput(0, reshape(ctx, x, shape));
}

// expand_as(input, other)
void lowerExpandAs(LoweringContext& ctx) {
  ctx.setOutput(0, broadcastTo(ctx, ctx.tensor(0), ctx.tensor(1)->type().shape));
}

} // namespace

void registerShapeOps(LoweringRegistry& registry) {
  registry.add("aten::broadcast_tensors", lowerBroadcastTensors);
  registry.add("aten::meshgrid", lowerMeshgrid);
  registry.add("aten::expand", lowerExpand);
  registry.add("aten::broadcast_to", lowerExpand); // (self, size), -1 keeping a dim
  registry.add("aten::expand_as", lowerExpandAs);
  registry.add("aten::view", lowerView);
  registry.add("aten::view_as", lowerViewAs);
  registry.add("aten::reshape_as", lowerViewAs);
  registry.add("aten::reshape", lowerView);
  registry.add("aten::flatten", lowerFlatten);
  registry.add("aten::ravel", lowerRavel);
  // The in-place forms change only the tensor's layout: aliasing.cpp records
  // them as views of its memory.
  registry.addWithInPlace("aten::unsqueeze", lowerUnsqueeze);
  registry.addWithInPlace("aten::squeeze", lowerSqueeze);
  registry.addWithInPlace("aten::transpose", lowerTranspose);
  registry.addWithInPlace("aten::swapaxes", lowerTranspose);
  registry.addWithInPlace("aten::swapdims", lowerTranspose);
  registry.add("aten::permute", lowerPermute);
  registry.add("aten::slice", lowerSlice);
  registry.add("aten::narrow", lowerNarrow);
  registry.add("aten::select", lowerSelect);
  registry.add("aten::select_scatter", lowerSelectOrSliceScatter);
  registry.add("aten::slice_scatter", lowerSelectOrSliceScatter);
  registry.add("aten::chunk", lowerChunk);
  registry.add("aten::unsafe_chunk", lowerChunk);
  registry.add("aten::split", lowerSplit);
  registry.add("aten::unsafe_split", lowerSplit);
  registry.add("aten::split_with_sizes", lowerSplit);
  registry.add("aten::cat", lowerCat);
  registry.add("aten::stack", lowerStack);
  registry.add("aten::hstack", lowerStackAlong<1, 1>);
  registry.add("aten::column_stack", lowerStackAlong<1, 1>);
  registry.add("aten::vstack", lowerStackAlong<2, 0>);
  registry.add("aten::row_stack", lowerStackAlong<2, 0>);
  registry.add("aten::dstack", lowerStackAlong<3, 2>);
}

} // namespace popsim::frontend::lowerings
