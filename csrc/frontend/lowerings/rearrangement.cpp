// Ops that rearrange elements: repeat, tile, repeat_interleave, flip (fliplr,
// flipud), roll, unbind, unflatten, movedim, tensor_split (hsplit, vsplit,
// dsplit), diagonal (and diagonal_scatter), diag, diagflat, triu, tril, trace,
// pixel_shuffle / pixel_unshuffle, channel_shuffle, Tensor.unfold and
// F.unfold / F.fold (im2col, col2im), and the ops built from such picks:
// cross, diff, atleast_1d/2d/3d, cartesian_prod, combinations, block_diag,
// vander and linalg.vander. Each is reshapes, permutes and
// broadcasts, or an index_select / index_add with positions known at
// compile time, so their gradients come from those ops' rules.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace popsim::frontend::lowerings {
namespace {

// x's slices along dim at `positions` (known at compile time).
ir::Value* pick(LoweringContext& ctx, ir::Value* x, int64_t dim,
                const std::vector<int64_t>& positions) {
  return ctx.emit(ir::OpKind::IndexSelect, {x, int64Constant(ctx, positions)}, {{"dim", dim}});
}

int64_t dimArgument(LoweringContext& ctx, size_t index, int64_t rank) {
  return normalizedDim(ctx, ctx.toInt(index), rank);
}

std::vector<int64_t> identityPerm(int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  return perm;
}

ir::Value* permuted(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& perm) {
  return std::is_sorted(perm.begin(), perm.end()) ? x : permute(ctx, x, perm);
}

// x repeated `repeats` times along each dim (leading repeats add dims): x as
// [1, s0, 1, s1, ...], broadcast to [r0, s0, r1, s1, ...], merged pairwise.
ir::Value* repeated(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& repeats) {
  ir::Shape shape = x->type().shape;
  if (repeats.size() < shape.size()) {
    ctx.unsupported("repeat with fewer repeats (" + std::to_string(repeats.size()) +
                    ") than the tensor has dimensions (" + std::to_string(shape.size()) + ")");
  }
  shape.insert(shape.begin(), repeats.size() - shape.size(), 1);
  ir::Shape spread, broadcast, merged;
  for (size_t d = 0; d < shape.size(); ++d) {
    spread.insert(spread.end(), {1, shape[d]});
    broadcast.insert(broadcast.end(), {repeats[d], shape[d]});
    merged.push_back(repeats[d] * shape[d]);
  }
  ir::Value* y = ctx.emit(ir::OpKind::Broadcast, {reshape(ctx, x, spread)}, {{"shape", broadcast}});
  return reshape(ctx, y, merged);
}

void lowerRepeat(LoweringContext& ctx) {
  ctx.setOutput(0, repeated(ctx, ctx.tensor(0), ctx.toIntList(1)));
}

// tile(self, dims): repeat, with dims padded with leading 1s to the rank.
void lowerTile(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> dims = ctx.toIntList(1);
  if (dims.size() < static_cast<size_t>(x->type().rank())) {
    dims.insert(dims.begin(), static_cast<size_t>(x->type().rank()) - dims.size(), 1);
  }
  ctx.setOutput(0, repeated(ctx, x, dims));
}

// repeat_interleave(self, repeats, dim=None): each slice repeated in place
// (flattened without dim); repeats a number or a tensor known at compile time.
void lowerRepeatInterleave(LoweringContext& ctx) {
  if (!ctx.argumentIndex("self").has_value()) {
    ctx.unsupported("repeat_interleave(repeats) of a tensor of counts alone (its output size "
                    "depends on the data)");
  }
  ir::Value* x = ctx.tensor(0);
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  const bool flat = !dimIndex.has_value() || ctx.isNone(*dimIndex);
  if (flat) x = reshape(ctx, x, {x->type().numel()});
  const int64_t dim = flat ? 0 : dimArgument(ctx, *dimIndex, x->type().rank());
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  std::vector<int64_t> counts;
  if (const std::optional<double> count = ctx.staticScalar(1)) {
    counts.assign(static_cast<size_t>(size), static_cast<int64_t>(*count));
  } else {
    counts = ctx.toIntList(1); // a constant tensor of counts
  }
  if (static_cast<int64_t>(counts.size()) != size) {
    ctx.unsupported("repeat_interleave with " + std::to_string(counts.size()) +
                    " counts for a dimension of size " + std::to_string(size));
  }
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i) {
    if (counts[static_cast<size_t>(i)] < 0)
      ctx.unsupported("repeat_interleave with a negative count");
    positions.insert(positions.end(), static_cast<size_t>(counts[static_cast<size_t>(i)]), i);
  }
  ctx.setOutput(0, pick(ctx, x, dim, positions));
}

// flip(self, dims): each dim read backwards.
// x with its elements along dim (normalised) in reverse order.
ir::Value* reversedAlong(LoweringContext& ctx, ir::Value* x, int64_t dim) {
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  std::vector<int64_t> positions(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i)
    positions[static_cast<size_t>(i)] = size - 1 - i;
  return pick(ctx, x, dim, positions);
}

void lowerFlip(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  for (int64_t dim : ctx.toIntList(1))
    x = reversedAlong(ctx, x, normalizedDim(ctx, dim, x->type().rank()));
  ctx.setOutput(0, x);
}

// fliplr / flipud(self): dim 1 / dim 0 read backwards.
template <int64_t Dim> void lowerFlipDim(LoweringContext& ctx) {
  ctx.setOutput(0, reversedAlong(ctx, ctx.tensor(0), Dim));
}

// roll(self, shifts, dims=[]): element i moves to i + shift (mod size);
// without dims, over the flattened tensor.
void lowerRoll(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape shape = x->type().shape;
  const std::vector<int64_t> shifts = ctx.toIntList(1);
  std::vector<int64_t> dims = ctx.numInputs() > 2 ? ctx.toIntList(2) : std::vector<int64_t>{};
  const bool flat = dims.empty();
  if (flat) {
    x = reshape(ctx, x, {x->type().numel()});
    dims = {0};
  }
  if (shifts.size() != dims.size()) ctx.unsupported("roll with as many shifts as dims");
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t dim = normalizedDim(ctx, dims[k], x->type().rank());
    const int64_t size = x->type().shape[static_cast<size_t>(dim)];
    if (size == 0) continue;
    std::vector<int64_t> positions(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i)
      positions[static_cast<size_t>(i)] = (((i - shifts[k]) % size) + size) % size;
    x = pick(ctx, x, dim, positions);
  }
  ctx.setOutput(0, flat ? reshape(ctx, x, shape) : x);
}

// A result PyTorch has no derivative for: training through it is an error.
ir::Value* withoutDerivative(LoweringContext& ctx, ir::Value* y, const std::string& op) {
  return ctx.emit(ir::OpKind::NoDerivative, {y},
                  {{"what", op},
                   {"hint", std::string("Detach its input, or rearrange with "
                                        "reshape and permute, which have one.")}});
}

// unbind(self, dim=0): the slices along dim, without it.
void lowerUnbind(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = ctx.numInputs() > 1 ? dimArgument(ctx, 1, x->type().rank()) : 0;
  ir::Shape shape = x->type().shape;
  const int64_t size = shape[static_cast<size_t>(dim)];
  shape.erase(shape.begin() + dim);
  std::vector<ir::Value*> parts;
  for (int64_t i = 0; i < size; ++i)
    parts.push_back(reshape(ctx, sliceAlong(ctx, x, dim, i, i + 1), shape));
  ctx.setOutputList(0, parts);
}

// unflatten(self, dim, sizes): one dim split into several (one may be -1).
void lowerUnflatten(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = dimArgument(ctx, 1, x->type().rank());
  std::vector<int64_t> sizes = ctx.toIntList(2);
  const int64_t total = x->type().shape[static_cast<size_t>(dim)];
  int64_t known = 1;
  for (int64_t s : sizes)
    known *= s == -1 ? 1 : s;
  for (int64_t& s : sizes)
    if (s == -1) s = known == 0 ? 0 : total / known;
  ir::Shape shape = x->type().shape;
  shape.erase(shape.begin() + dim);
  shape.insert(shape.begin() + dim, sizes.begin(), sizes.end());
  if (ir::elementCount(shape) != x->type().numel()) {
    ctx.unsupported("unflatten of a dimension of size " + std::to_string(total) + " into sizes " +
                    listToString(ctx.toIntList(2)));
  }
  ctx.setOutput(0, reshape(ctx, x, shape));
}

// movedim(self, source, destination) with ints or lists.
void lowerMovedim(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  std::vector<int64_t> source = ctx.toIntList(1), destination = ctx.toIntList(2);
  if (source.size() != destination.size())
    ctx.unsupported("movedim with as many sources as destinations");
  for (auto* list : {&source, &destination})
    for (int64_t& d : *list)
      d = normalizedDim(ctx, d, rank);
  std::vector<int64_t> perm(static_cast<size_t>(rank), -1);
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < source.size(); ++i) {
    perm[static_cast<size_t>(destination[i])] = source[i];
    used[static_cast<size_t>(source[i])] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p != -1) continue;
    while (used[static_cast<size_t>(next)])
      ++next;
    p = next++;
  }
  ctx.setOutput(0, permuted(ctx, x, perm));
}

// x split along dim as tensor_split splits it: into the number of sections
// argument `index` gives (the first size % n pieces one longer), or at the
// positions it lists.
void splitSections(LoweringContext& ctx, ir::Value* x, int64_t dim, size_t index) {
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  std::vector<int64_t> bounds = {0};
  if (const std::optional<double> sections = ctx.staticScalar(index);
      sections && !ctx.isTensor(index)) {
    const int64_t n = static_cast<int64_t>(*sections);
    if (n <= 0) ctx.unsupported("tensor_split into " + std::to_string(n) + " sections");
    for (int64_t i = 0; i < n; ++i)
      bounds.push_back(bounds.back() + size / n + (i < size % n ? 1 : 0));
  } else {
    for (int64_t b : ctx.toIntList(index))
      bounds.push_back(std::clamp<int64_t>(b < 0 ? b + size : b, 0, size));
    bounds.push_back(size);
  }
  std::vector<ir::Value*> parts;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int64_t start = std::min(bounds[i], size);
    parts.push_back(sliceAlong(ctx, x, dim, start, std::max(start, bounds[i + 1])));
  }
  ctx.setOutputList(0, parts);
}

// tensor_split(self, sections or indices, dim=0).
void lowerTensorSplit(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = ctx.numInputs() > 2 ? dimArgument(ctx, 2, x->type().rank()) : 0;
  splitSections(ctx, x, dim, 1);
}

// hsplit / vsplit / dsplit(self, sections or indices): tensor_split along
// dim 1 (a vector's dim 0), 0 or 2. Eager checked while tracing that the
// tensor has the dim and that the sections divide it.
template <int64_t Dim> void lowerSplitAlong(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  splitSections(ctx, x, Dim == 1 && x->type().rank() == 1 ? 0 : Dim, 1);
}

// How the diagonal `offset` of dims (a, b) of a tensor of `shape` is read:
// the tensor permuted by `perm` (a and b last) and reshaped to `flat` (the
// two merged), then the elements at `positions` along its last dim.
struct DiagonalLayout {
  std::vector<int64_t> perm;
  ir::Shape flat;
  std::vector<int64_t> positions;
};

DiagonalLayout diagonalLayout(const ir::Shape& shape, int64_t offset, int64_t a, int64_t b) {
  const int64_t rows = shape[static_cast<size_t>(a)], columns = shape[static_cast<size_t>(b)];
  DiagonalLayout layout;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d != a && d != b) {
      layout.perm.push_back(d);
      layout.flat.push_back(shape[static_cast<size_t>(d)]);
    }
  }
  layout.perm.insert(layout.perm.end(), {a, b});
  layout.flat.push_back(rows * columns);
  for (int64_t i = std::max<int64_t>(0, -offset); i < rows && i + offset < columns; ++i) {
    layout.positions.push_back(i * columns + i + offset);
  }
  return layout;
}

// The elements (i, i + offset) of dims (a, b), along a last dim.
ir::Value* diagonalOf(LoweringContext& ctx, ir::Value* x, int64_t offset, int64_t a, int64_t b) {
  const DiagonalLayout layout = diagonalLayout(x->type().shape, offset, a, b);
  const int64_t last = static_cast<int64_t>(layout.flat.size()) - 1;
  if (layout.positions.empty()) {
    ir::Shape empty = layout.flat;
    empty.back() = 0;
    return constantFilled(ctx, {x->type().dtype, empty}, 0.0);
  }
  return pick(ctx, reshape(ctx, permuted(ctx, x, layout.perm), layout.flat), last,
              layout.positions);
}

// diagonal(self, offset=0, dim1=0, dim2=1), and linalg.diagonal(A, *,
// offset=0, dim1=-2, dim2=-1), the same op with other defaults.
void lowerDiagonal(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  const int64_t a = dimArgument(ctx, 2, rank), b = dimArgument(ctx, 3, rank);
  if (a == b) ctx.unsupported("diagonal of the same dim twice");
  ctx.setOutput(0, diagonalOf(ctx, x, ctx.toInt(1), a, b));
}

// diagonal_scatter(self, src, offset=0, dim1=0, dim2=1): self with that
// diagonal replaced by src (which has the diagonal's shape; eager checked).
void lowerDiagonalScatter(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  const int64_t a = dimArgument(ctx, 3, rank), b = dimArgument(ctx, 4, rank);
  if (a == b) ctx.unsupported("diagonal_scatter of the same dim twice");
  const DiagonalLayout layout = diagonalLayout(x->type().shape, ctx.toInt(2), a, b);
  if (layout.positions.empty()) return ctx.setOutput(0, x);
  ir::Value* moved = permuted(ctx, x, layout.perm);
  const ir::Shape movedShape = moved->type().shape;
  ir::Value* written =
      ctx.emit(ir::OpKind::IndexAdd,
               {reshape(ctx, moved, layout.flat), int64Constant(ctx, layout.positions),
                castTo(ctx, ctx.tensor(1), x->type().dtype)},
               {{"dim", static_cast<int64_t>(layout.flat.size()) - 1}, {"accumulate", false}});
  ctx.setOutput(
      0, permuted(ctx, reshape(ctx, written, movedShape), ir::inversePermutation(layout.perm)));
}

// The flat positions, in a square matrix of side n + |offset|, of the n
// elements of its diagonal `offset` (above the main one when positive).
std::vector<int64_t> diagonalPositions(int64_t n, int64_t offset) {
  const int64_t side = n + std::abs(offset);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = offset >= 0 ? i : i - offset, column = offset >= 0 ? i + offset : i;
    positions.push_back(row * side + column);
  }
  return positions;
}

// The square matrix with `vector` on its diagonal `offset`, zeros elsewhere.
ir::Value* matrixWithDiagonal(LoweringContext& ctx, ir::Value* vector, int64_t offset) {
  const int64_t n = vector->type().shape[0];
  const int64_t side = n + std::abs(offset);
  ir::Value* zeros = constantFilled(ctx, {vector->type().dtype, {side * side}}, 0.0);
  ir::Value* y = ctx.emit(ir::OpKind::IndexAdd,
                          {zeros, int64Constant(ctx, diagonalPositions(n, offset)), vector},
                          {{"dim", int64_t{0}}, {"accumulate", false}});
  return reshape(ctx, y, {side, side});
}

// diag(self, diagonal=0): the diagonal of a matrix, or the square matrix
// with a vector on that diagonal (its elements written into zeros).
void lowerDiag(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t offset = ctx.numInputs() > 1 ? ctx.toInt(1) : 0;
  if (x->type().rank() == 2) {
    ctx.setOutput(0, diagonalOf(ctx, x, offset, 0, 1));
    return;
  }
  if (x->type().rank() != 1)
    ctx.unsupported("diag of a tensor of rank " + std::to_string(x->type().rank()));
  ctx.setOutput(0, matrixWithDiagonal(ctx, x, offset));
}

// diagflat(self, offset=0): the elements, flattened, on a diagonal.
void lowerDiagflat(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t offset = ctx.numInputs() > 1 ? ctx.toInt(1) : 0;
  ctx.setOutput(0, matrixWithDiagonal(ctx, reshape(ctx, x, {x->type().numel()}), offset));
}

// diag_embed(self, offset=0, dim1=-2, dim2=-1): each last-dim vector of x as
// the diagonal `offset` of a square matrix (zeros elsewhere), the matrix's
// rows and columns at dims dim1 and dim2 of the result.
void lowerDiagEmbed(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t offset = ctx.numInputs() > 1 ? ctx.toInt(1) : 0;
  const int64_t rank = x->type().rank() + 1;
  const int64_t dim1 = normalizedDim(ctx, ctx.numInputs() > 2 ? ctx.toInt(2) : -2, rank);
  const int64_t dim2 = normalizedDim(ctx, ctx.numInputs() > 3 ? ctx.toInt(3) : -1, rank);
  if (dim1 == dim2) ctx.unsupported("diag_embed with dim1 equal to dim2");
  if (x->type().rank() == 0) x = reshape(ctx, x, {1});
  ir::Shape shape = x->type().shape;
  const int64_t n = shape.back();
  const int64_t side = n + std::abs(offset);
  const std::vector<int64_t> positions = diagonalPositions(n, offset);
  shape.back() = side * side;
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  ir::Value* y = ctx.emit(
      ir::OpKind::IndexAdd,
      {constantFilled(ctx, {x->type().dtype, shape}, 0.0), int64Constant(ctx, positions), x},
      {{"dim", last}, {"accumulate", false}});
  shape.back() = side;
  shape.push_back(side);
  y = reshape(ctx, y, shape);
  // The matrix's dims are last; result dim k takes dim perm[k].
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  int64_t batch = 0;
  for (int64_t k = 0; k < rank; ++k)
    perm[static_cast<size_t>(k)] = k == dim1 ? rank - 2 : k == dim2 ? rank - 1 : batch++;
  if (!std::is_sorted(perm.begin(), perm.end())) y = permute(ctx, y, perm);
  ctx.setOutput(0, y);
}

// rot90(self, k=1, dims=[0, 1]): as PyTorch turns it, by flips and a
// transpose of the two dims (k taken modulo 4; a negative k turns the other way).
void lowerRot90(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  const int64_t k = ((ctx.numInputs() > 1 ? ctx.toInt(1) : 1) % 4 + 4) % 4;
  const std::vector<int64_t> given =
      ctx.numInputs() > 2 ? ctx.toIntList(2) : std::vector<int64_t>{0, 1};
  if (given.size() != 2) ctx.unsupported("rot90 with " + std::to_string(given.size()) + " dims");
  const int64_t first = normalizedDim(ctx, given[0], rank);
  const int64_t second = normalizedDim(ctx, given[1], rank);
  const auto transposed = [&](ir::Value* value) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i)
      perm[static_cast<size_t>(i)] = i;
    std::swap(perm[static_cast<size_t>(first)], perm[static_cast<size_t>(second)]);
    return permute(ctx, value, perm);
  };
  if (k == 1) x = transposed(reversedAlong(ctx, x, second));
  if (k == 2) x = reversedAlong(ctx, reversedAlong(ctx, x, first), second);
  if (k == 3) x = transposed(reversedAlong(ctx, x, first));
  ctx.setOutput(0, x);
}

// triu / tril(self, diagonal=0): the elements on and above (below) the
// diagonal of the last two dims, zeros elsewhere.
template <bool Upper> void lowerTriangle(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape& shape = x->type().shape;
  if (shape.size() < 2) ctx.unsupported("triu/tril of a tensor of rank < 2");
  const int64_t offset = ctx.numInputs() > 1 ? ctx.toInt(1) : 0;
  const int64_t rows = shape[shape.size() - 2], columns = shape.back();
  std::vector<uint8_t> mask(static_cast<size_t>(rows * columns));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < columns; ++j) {
      mask[static_cast<size_t>(i * columns + j)] = Upper ? j - i >= offset : j - i <= offset;
    }
  }
  ir::Value* keep = ctx.constant({ir::DType::Bool, {rows, columns}}, std::move(mask));
  ctx.setOutput(
      0, ctx.emit(ir::OpKind::Where, {keep, x, constantFilled(ctx, {x->type().dtype, {}}, 0.0)}));
}

// fill_diagonal_(self, value, wrap=False): `value` where every index is
// equal, as NumPy's fill_diagonal: the positions a step of (the row length
// + 1) apart in the flattened tensor. Without wrap a tall matrix keeps its
// first square's diagonal; with wrap the pattern restarts after a row gap.
void lowerFillDiagonal(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape& shape = x->type().shape;
  // (A trace ran PyTorch's own checks; a TorchScript model reaches these.)
  if (shape.size() < 2) ctx.unsupported("fill_diagonal_ of " + x->type().str() + " (rank < 2)");
  if (shape.size() > 2 &&
      std::adjacent_find(shape.begin(), shape.end(), std::not_equal_to<>()) != shape.end()) {
    ctx.unsupported("fill_diagonal_ of " + x->type().str() +
                    ": beyond rank 2 every dimension must have the same length");
  }
  const int64_t numel = x->type().numel();
  int64_t step = 0; // the sum of the strides
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    step += stride;
    stride *= shape[d];
  }
  int64_t end = numel;
  const bool wrap = ctx.numInputs() > 2 && ctx.toBool(2);
  if (shape.size() == 2 && !wrap) {
    end = std::min(numel, shape[1] * shape[1]); // the first min(rows, columns) rows
  }
  std::vector<uint8_t> mask(static_cast<size_t>(numel));
  for (int64_t position = 0; position < end; position += step) {
    mask[static_cast<size_t>(position)] = 1;
  }
  ir::Value* diagonal = ctx.constant({ir::DType::Bool, shape}, std::move(mask));
  const std::optional<double> number = ctx.staticScalar(1);
  ir::Value* value = number.has_value() ? constantFilled(ctx, {x->type().dtype, {}}, *number)
                                        : castTo(ctx, ctx.tensor(1), x->type().dtype);
  ctx.setOutput(0, ctx.emit(ir::OpKind::Where, {diagonal, value, x}));
}

// pixel_shuffle(self, r): [*, C r^2, H, W] -> [*, C, H r, W r]; pixel_unshuffle the inverse.
template <bool Shuffle> void lowerPixelShuffle(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t r = ctx.toInt(1);
  ir::Shape shape = x->type().shape;
  if (shape.size() < 3 || r <= 0) ctx.unsupported("pixel (un)shuffle of " + x->type().str());
  const ir::Shape batch(shape.begin(), shape.end() - 3);
  const int64_t c = shape[shape.size() - 3], h = shape[shape.size() - 2], w = shape.back();
  const int64_t b = static_cast<int64_t>(batch.size());
  ir::Shape split = batch, out = batch;
  std::vector<int64_t> perm = identityPerm(b);
  if (Shuffle) {
    if (c % (r * r) != 0)
      ctx.unsupported("pixel_shuffle of " + std::to_string(c) + " channels by " +
                      std::to_string(r));
    split.insert(split.end(), {c / (r * r), r, r, h, w});
    perm.insert(perm.end(), {b, b + 3, b + 1, b + 4, b + 2}); // [C, H, r, W, r]
    out.insert(out.end(), {c / (r * r), h * r, w * r});
  } else {
    if (h % r != 0 || w % r != 0)
      ctx.unsupported("pixel_unshuffle of " + x->type().str() + " by " + std::to_string(r));
    split.insert(split.end(), {c, h / r, r, w / r, r});
    perm.insert(perm.end(), {b, b + 2, b + 4, b + 1, b + 3}); // [C, r, r, H, W]
    out.insert(out.end(), {c * r * r, h / r, w / r});
  }
  ctx.setOutput(0, reshape(ctx, permute(ctx, reshape(ctx, x, split), perm), out));
}

// channel_shuffle(self, groups): [N, g, C/g, *] with the two middle dims
// swapped (PyTorch has no derivative for it).
void lowerChannelShuffle(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t groups = ctx.toInt(1);
  const ir::Shape shape = x->type().shape;
  if (shape.size() < 2 || groups <= 0 || shape[1] % groups != 0) {
    ctx.unsupported("channel_shuffle of " + x->type().str() + " in " + std::to_string(groups) +
                    " groups");
  }
  ir::Shape split = {shape[0], groups, shape[1] / groups};
  split.insert(split.end(), shape.begin() + 2, shape.end());
  std::vector<int64_t> perm = identityPerm(static_cast<int64_t>(split.size()));
  std::swap(perm[1], perm[2]);
  ir::Value* y = reshape(ctx, permute(ctx, reshape(ctx, x, split), perm), shape);
  ctx.setOutput(0, withoutDerivative(ctx, y, "channel_shuffle"));
}

// narrow_copy(self, dim, start, length): narrow, which PyTorch cannot differentiate.
void lowerNarrowCopy(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t dim = dimArgument(ctx, 1, x->type().rank());
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  int64_t start = ctx.toInt(2);
  if (start < 0) start += size;
  const int64_t length = ctx.toInt(3);
  if (start < 0 || length < 0 || start + length > size) {
    ctx.unsupported("narrow_copy of [" + std::to_string(start) + ", " +
                    std::to_string(start + length) + ") from a dimension of size " +
                    std::to_string(size));
  }
  ctx.setOutput(
      0, withoutDerivative(ctx, sliceAlong(ctx, x, dim, start, start + length), "narrow_copy"));
}

// Tensor.unfold(dimension, size, step): the windows along a dim as a new last dim.
void lowerUnfold(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = std::max<int64_t>(x->type().rank(), 1);
  if (x->type().rank() == 0) x = reshape(ctx, x, {1});
  const int64_t dim = normalizedDim(ctx, ctx.toInt(1), rank);
  const int64_t size = ctx.toInt(2), step = ctx.toInt(3);
  const int64_t length = x->type().shape[static_cast<size_t>(dim)];
  if (size < 0 || size > length || step <= 0) {
    ctx.unsupported("unfold of windows of " + std::to_string(size) + " every " +
                    std::to_string(step) + " along a dimension of size " + std::to_string(length));
  }
  const int64_t windows = (length - size) / step + 1;
  std::vector<int64_t> positions;
  for (int64_t w = 0; w < windows; ++w)
    for (int64_t k = 0; k < size; ++k)
      positions.push_back(w * step + k);
  ir::Value* picked = pick(ctx, x, dim, positions);
  ir::Shape split = x->type().shape;
  split[static_cast<size_t>(dim)] = windows;
  split.insert(split.begin() + dim + 1, size);
  std::vector<int64_t> perm = identityPerm(rank + 1);
  perm.erase(perm.begin() + dim + 1);
  perm.push_back(dim + 1);
  ctx.setOutput(0, permuted(ctx, reshape(ctx, picked, split), perm));
}

// The geometry of im2col / col2im: per kernel tap and output position, the
// position in the padded image.
struct Patches {
  int64_t paddedH, paddedW, blocks;
  std::vector<int64_t> positions; // [taps x blocks], into the padded H x W
};

Patches patchesOf(LoweringContext& ctx, int64_t h, int64_t w, size_t first) {
  const std::vector<int64_t> kernel = pair(ctx, ctx.toIntList(first), "kernel_size");
  const std::vector<int64_t> dilation = pair(ctx, ctx.toIntList(first + 1), "dilation");
  const std::vector<int64_t> padding = pair(ctx, ctx.toIntList(first + 2), "padding");
  const std::vector<int64_t> stride = pair(ctx, ctx.toIntList(first + 3), "stride");
  Patches p;
  p.paddedH = h + 2 * padding[0];
  p.paddedW = w + 2 * padding[1];
  const int64_t outH = (p.paddedH - dilation[0] * (kernel[0] - 1) - 1) / stride[0] + 1;
  const int64_t outW = (p.paddedW - dilation[1] * (kernel[1] - 1) - 1) / stride[1] + 1;
  if (outH <= 0 || outW <= 0) ctx.unsupported("unfold/fold windows larger than the padded image");
  p.blocks = outH * outW;
  for (int64_t i = 0; i < kernel[0]; ++i)
    for (int64_t j = 0; j < kernel[1]; ++j)
      for (int64_t y = 0; y < outH; ++y)
        for (int64_t x = 0; x < outW; ++x)
          p.positions.push_back((y * stride[0] + i * dilation[0]) * p.paddedW + x * stride[1] +
                                j * dilation[1]);
  return p;
}

// im2col(self [N, C, H, W], kernel_size, dilation, padding, stride) -> [N, C k k, L].
void lowerIm2col(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const bool unbatched = x->type().rank() == 3;
  if (unbatched)
    x = reshape(ctx, x, {1, x->type().shape[0], x->type().shape[1], x->type().shape[2]});
  const ir::Shape shape = x->type().shape;
  const Patches p = patchesOf(ctx, shape[2], shape[3], 1);
  const std::vector<int64_t> padding = pair(ctx, ctx.toIntList(3), "padding");
  ir::Value* padded = x;
  for (int64_t d : {2, 3}) { // zeros around H and W
    const int64_t pad = padding[static_cast<size_t>(d - 2)];
    if (pad == 0) continue;
    ir::TensorType side = padded->type();
    side.shape[static_cast<size_t>(d)] = pad;
    ir::Value* zeros = constantFilled(ctx, side, 0.0);
    padded = ctx.emit(ir::OpKind::Concat, {zeros, padded, zeros}, {{"dim", d}});
  }
  ir::Value* flat = reshape(ctx, padded, {shape[0], shape[1], p.paddedH * p.paddedW});
  ir::Value* columns = pick(ctx, flat, 2, p.positions);
  const int64_t taps = static_cast<int64_t>(p.positions.size()) / p.blocks;
  ir::Value* y = reshape(ctx, columns, {shape[0], shape[1] * taps, p.blocks});
  ctx.setOutput(0, unbatched ? reshape(ctx, y, {shape[1] * taps, p.blocks}) : y);
}

// col2im(self [N, C k k, L], output_size, kernel_size, dilation, padding,
// stride) -> [N, C, H, W]: the columns summed back into the padded image,
// which is then cropped.
void lowerCol2im(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const bool unbatched = x->type().rank() == 2;
  if (unbatched) x = reshape(ctx, x, {1, x->type().shape[0], x->type().shape[1]});
  const std::vector<int64_t> size = pair(ctx, ctx.toIntList(1), "output_size");
  const Patches p = patchesOf(ctx, size[0], size[1], 2);
  const std::vector<int64_t> padding = pair(ctx, ctx.toIntList(4), "padding");
  const ir::Shape shape = x->type().shape;
  const int64_t taps = static_cast<int64_t>(p.positions.size()) / p.blocks;
  if (shape[1] % taps != 0 || shape[2] != p.blocks) {
    ctx.unsupported("fold of " + x->type().str() + ": expected [N, C x " + std::to_string(taps) +
                    ", " + std::to_string(p.blocks) + "]");
  }
  const int64_t channels = shape[1] / taps;
  ir::Value* columns = reshape(ctx, x, {shape[0], channels, taps * p.blocks});
  ir::Value* zeros =
      constantFilled(ctx, {x->type().dtype, {shape[0], channels, p.paddedH * p.paddedW}}, 0.0);
  ir::Value* image =
      ctx.emit(ir::OpKind::IndexAdd, {zeros, int64Constant(ctx, p.positions), columns},
               {{"dim", int64_t{2}}, {"accumulate", true}});
  ir::Value* y = reshape(ctx, image, {shape[0], channels, p.paddedH, p.paddedW});
  y = sliceAlong(ctx, y, 2, padding[0], padding[0] + size[0]);
  y = sliceAlong(ctx, y, 3, padding[1], padding[1] + size[1]);
  ctx.setOutput(0, unbatched ? reshape(ctx, y, {channels, size[0], size[1]}) : y);
}

// trace(self): the sum of a matrix's diagonal (int64 for integers and bool).
void lowerTrace(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::Shape& shape = x->type().shape;
  if (shape.size() != 2) {
    ctx.unsupported("trace of a tensor of rank " + std::to_string(shape.size()) +
                    " (it takes a matrix)");
  }
  if (!ir::isFloat(x->type().dtype)) x = castTo(ctx, x, ir::DType::Int64);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < std::min(shape[0], shape[1]); ++i)
    positions.push_back(i * (shape[1] + 1));
  ir::Value* diagonal = pick(ctx, reshape(ctx, x, {shape[0] * shape[1]}), 0, positions);
  ctx.setOutput(0, ctx.emit(ir::OpKind::ReduceSum, {diagonal},
                            {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}));
}

// cross / linalg_cross(self, other, dim): the cross product of 3-vectors
// along dim (cross's default: the first dimension of size 3), broadcast:
// a[1, 2, 0] * b[2, 0, 1] - a[2, 0, 1] * b[1, 2, 0].
void lowerCross(LoweringContext& ctx) {
  const ir::DType dtype = promotedDType(ctx, {0, 1});
  ir::Value* a = castTo(ctx, ctx.tensor(0), dtype);
  ir::Value* b = castTo(ctx, ctx.tensor(1), dtype);
  const auto common = ir::broadcastShapes(a->type().shape, b->type().shape);
  if (!common) ctx.unsupported("cross of tensors whose shapes do not broadcast");
  a = broadcastTo(ctx, a, *common);
  b = broadcastTo(ctx, b, *common);
  const auto rank = static_cast<int64_t>(common->size());
  int64_t dim = -1;
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  if (dimIndex.has_value() && !ctx.isNone(*dimIndex)) {
    dim = normalizedDim(ctx, ctx.toInt(*dimIndex), rank);
  } else if (ctx.opName() == "aten::linalg_cross") {
    dim = rank - 1;
  } else {
    const auto three = std::find(common->begin(), common->end(), 3);
    if (three == common->end()) ctx.unsupported("cross of tensors without a dimension of size 3");
    dim = three - common->begin();
  }
  if ((*common)[static_cast<size_t>(dim)] != 3) {
    ctx.unsupported("cross along dimension " + std::to_string(dim) + " of size " +
                    std::to_string((*common)[static_cast<size_t>(dim)]) + " (it takes 3)");
  }
  const auto turned = [&](ir::Value* x, std::vector<int64_t> order) {
    return pick(ctx, x, dim, order);
  };
  ir::Value* first = ctx.emit(ir::OpKind::Mul, {turned(a, {1, 2, 0}), turned(b, {2, 0, 1})});
  ir::Value* second = ctx.emit(ir::OpKind::Mul, {turned(a, {2, 0, 1}), turned(b, {1, 2, 0})});
  ctx.setOutput(0, ctx.emit(ir::OpKind::Sub, {first, second}));
}

// diff(self, n=1, dim=-1, prepend=None, append=None): x[1:] - x[:-1] along
// dim, n times, after prepend and append are joined on (for bool, x[1:] !=
// x[:-1], as PyTorch's).
void lowerDiff(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t n = ctx.toInt(1);
  const int64_t dim = normalizedDim(ctx, ctx.toInt(2), x->type().rank());
  std::vector<ir::Value*> parts;
  if (!ctx.isNone(3)) parts.push_back(ctx.tensor(3));
  parts.push_back(x);
  if (!ctx.isNone(4)) parts.push_back(ctx.tensor(4));
  if (parts.size() > 1) x = ctx.emit(ir::OpKind::Concat, parts, {{"dim", dim}});
  for (int64_t step = 0; step < n && x->type().shape[static_cast<size_t>(dim)] > 0; ++step) {
    const int64_t size = x->type().shape[static_cast<size_t>(dim)];
    ir::Value* later = sliceAlong(ctx, x, dim, 1, size);
    ir::Value* earlier = sliceAlong(ctx, x, dim, 0, size - 1);
    x = x->type().dtype == ir::DType::Bool ? emitBinary(ctx, "ne", later, earlier)
                                           : ctx.emit(ir::OpKind::Sub, {later, earlier});
  }
  ctx.setOutput(0, x);
}

// atleast_1d / 2d / 3d(self): 0-d as [1] (and [1, 1], [1, 1, 1]), a vector
// [n] as [1, n] (2d) or [1, n, 1] (3d), a matrix [m, n] as [m, n, 1] (3d).
template <size_t Rank> void lowerAtLeast(LoweringContext& ctx) {
  ctx.setOutput(0, atLeastRank(ctx, ctx.tensor(0), Rank));
}

// cartesian_prod(tensors): every combination of the vectors' elements, one
// per row, the last vector varying fastest (one vector: itself).
void lowerCartesianProd(LoweringContext& ctx) {
  std::vector<ir::Value*> vectors = withCommonDType(ctx, ctx.tensorList(0));
  ir::Shape grid;
  for (ir::Value* v : vectors) {
    if (v->type().rank() != 1) ctx.unsupported("cartesian_prod of tensors that are not vectors");
    grid.push_back(v->type().shape[0]);
  }
  if (vectors.size() == 1) return ctx.setOutput(0, vectors[0]);
  const int64_t rows = std::accumulate(grid.begin(), grid.end(), int64_t{1},
                                       [](int64_t a, int64_t b) { return a * b; });
  std::vector<ir::Value*> columns;
  for (size_t i = 0; i < vectors.size(); ++i) {
    ir::Shape alone(grid.size(), 1);
    alone[i] = grid[i];
    ir::Value* spread = broadcastTo(ctx, reshape(ctx, vectors[i], alone), grid);
    columns.push_back(reshape(ctx, spread, {rows, 1}));
  }
  ctx.setOutput(0, ctx.emit(ir::OpKind::Concat, columns, {{"dim", int64_t{1}}}));
}

// combinations(self, r=2, with_replacement=False): every choice of r of the
// vector's elements (repeats allowed with replacement), in order, one per
// row, in the lexicographic order of their positions, as itertools and
// PyTorch list them.
void lowerCombinations(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t r = ctx.toInt(1);
  const bool replacement = ctx.toBool(2);
  if (x->type().rank() != 1) ctx.unsupported("combinations of a tensor that is not a vector");
  const int64_t n = x->type().shape[0];
  std::vector<std::vector<int64_t>> columns(static_cast<size_t>(std::max<int64_t>(r, 0)));
  std::vector<int64_t> chosen(columns.size(), 0);
  // Visits every non-decreasing (with replacement) or increasing choice.
  const std::function<void(size_t, int64_t)> choose = [&](size_t k, int64_t from) {
    if (k == chosen.size()) {
      for (size_t c = 0; c < chosen.size(); ++c)
        columns[c].push_back(chosen[c]);
      return;
    }
    for (int64_t i = from; i < n; ++i) {
      chosen[k] = i;
      choose(k + 1, replacement ? i : i + 1);
    }
  };
  if (r > 0) choose(0, 0);
  if (r <= 0 || columns[0].empty()) {
    ctx.unsupported("combinations of " + std::to_string(r) + " of " + std::to_string(n) +
                    " elements (an empty result)");
  }
  const auto rows = static_cast<int64_t>(columns[0].size());
  std::vector<ir::Value*> picked;
  for (const std::vector<int64_t>& positions : columns) {
    ir::Value* column = ctx.emit(ir::OpKind::IndexSelect, {x, int64Constant(ctx, positions)},
                                 {{"dim", int64_t{0}}});
    picked.push_back(reshape(ctx, column, {rows, 1}));
  }
  ctx.setOutput(0, picked.size() == 1
                       ? reshape(ctx, picked[0], {rows, 1})
                       : ctx.emit(ir::OpKind::Concat, picked, {{"dim", int64_t{1}}}));
}

// block_diag(tensors): the matrices (a 0-d tensor is 1 x 1, a vector one row)
// along the diagonal of zeros, in their common dtype.
void lowerBlockDiag(LoweringContext& ctx) {
  std::vector<ir::Value*> blocks = withCommonDType(ctx, ctx.tensorList(0));
  int64_t width = 0;
  for (ir::Value*& block : blocks) {
    const ir::Shape& shape = block->type().shape;
    if (shape.size() > 2) ctx.unsupported("block_diag of a tensor of rank > 2");
    if (shape.size() < 2) block = reshape(ctx, block, {1, block->type().numel()});
    if (block->type().numel() == 0) ctx.unsupported("block_diag of an empty tensor");
    width += block->type().shape[1];
  }
  std::vector<ir::Value*> rows;
  int64_t left = 0;
  for (ir::Value* block : blocks) {
    const int64_t height = block->type().shape[0];
    const int64_t columns = block->type().shape[1];
    std::vector<ir::Value*> pieces;
    const ir::DType dtype = block->type().dtype;
    if (left > 0) pieces.push_back(constantFilled(ctx, {dtype, {height, left}}, 0.0));
    pieces.push_back(block);
    if (width - left - columns > 0) {
      pieces.push_back(constantFilled(ctx, {dtype, {height, width - left - columns}}, 0.0));
    }
    rows.push_back(pieces.size() == 1
                       ? pieces[0]
                       : ctx.emit(ir::OpKind::Concat, pieces, {{"dim", int64_t{1}}}));
    left += columns;
  }
  ctx.setOutput(0, rows.size() == 1 ? rows[0]
                                    : ctx.emit(ir::OpKind::Concat, rows, {{"dim", int64_t{0}}}));
}

// vander(x, N=None, increasing=False): the powers x^0 .. x^(N-1) of the
// vector's elements, one row each, as PyTorch builds them (a column of ones,
// then running products), the highest power first unless increasing.
void lowerVander(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (x->type().rank() != 1) ctx.unsupported("vander of a tensor that is not a vector");
  if (!ir::isFloat(x->type().dtype)) x = castTo(ctx, x, ir::DType::Int64);
  const int64_t n = x->type().shape[0];
  const int64_t powers = ctx.isNone(1) ? n : ctx.toInt(1);
  if (powers < 1 || n == 0)
    ctx.unsupported("vander with no powers or no elements (an empty result)");
  ir::Value* result = constantFilled(ctx, {x->type().dtype, {n, 1}}, 1.0);
  if (powers > 1) {
    ir::Value* repeated = broadcastTo(ctx, reshape(ctx, x, {n, 1}), {n, powers - 1});
    ir::Value* running = ctx.emit(ir::OpKind::CumulativeProduct, {repeated}, {{"dim", int64_t{1}}});
    result = ctx.emit(ir::OpKind::Concat, {result, running}, {{"dim", int64_t{1}}});
  }
  result = ctx.toBool(2) ? result : reversedAlong(ctx, result, 1);
  if (ir::isFloat(result->type().dtype)) {
    result = ctx.emit(ir::OpKind::NoDerivative, {result},
                      {{"what", std::string("vander")},
                       {"hint", std::string("Build the powers with torch.cumprod (or x[:, None] ** "
                                            "torch.arange(n)), whose gradients PyTorch has.")}});
  }
  ctx.setOutput(0, result);
}

// linalg_vander(x, *, N=None): the powers x^0 .. x^(N-1) of each element
// along a new last dim, as PyTorch builds them (ones, then running products
// of x, through which the gradient flows). Eager refused N < 2 while tracing.
void lowerLinalgVander(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (!ir::isFloat(x->type().dtype)) x = castTo(ctx, x, ir::DType::Int64); // cumprod's promotion
  if (x->type().rank() == 0) x = reshape(ctx, x, {1});
  ir::Shape shape = x->type().shape;
  const int64_t powers = ctx.isNone(1) ? shape.back() : ctx.toInt(1);
  ir::Shape column = shape;
  column.push_back(1);
  ir::Shape repeated = shape;
  repeated.push_back(powers - 1);
  const auto last = static_cast<int64_t>(shape.size());
  ir::Value* running =
      ctx.emit(ir::OpKind::CumulativeProduct, {broadcastTo(ctx, reshape(ctx, x, column), repeated)},
               {{"dim", last}});
  ctx.setOutput(0, ctx.emit(ir::OpKind::Concat,
                            {constantFilled(ctx, {x->type().dtype, column}, 1.0), running},
                            {{"dim", last}}));
}

} // namespace

void registerRearrangement(LoweringRegistry& registry) {
  registry.add("aten::repeat", lowerRepeat);
  registry.add("aten::tile", lowerTile);
  registry.add("aten::repeat_interleave", lowerRepeatInterleave);
  registry.add("aten::flip", lowerFlip);
  registry.add("aten::fliplr", lowerFlipDim<1>);
  registry.add("aten::flipud", lowerFlipDim<0>);
  registry.add("aten::roll", lowerRoll);
  registry.add("aten::unbind", lowerUnbind);
  registry.add("aten::unflatten", lowerUnflatten);
  registry.add("aten::movedim", lowerMovedim);
  registry.add("aten::moveaxis", lowerMovedim);
  registry.add("aten::tensor_split", lowerTensorSplit);
  registry.add("aten::hsplit", lowerSplitAlong<1>);
  registry.add("aten::vsplit", lowerSplitAlong<0>);
  registry.add("aten::dsplit", lowerSplitAlong<2>);
  registry.add("aten::diagonal", lowerDiagonal);
  registry.add("aten::linalg_diagonal", lowerDiagonal);
  registry.add("aten::diagonal_scatter", lowerDiagonalScatter);
  registry.add("aten::diag", lowerDiag);
  registry.add("aten::diagflat", lowerDiagflat);
  registry.add("aten::diag_embed", lowerDiagEmbed);
  registry.add("aten::rot90", lowerRot90);
  registry.addWithInPlace("aten::triu", lowerTriangle<true>);
  registry.addWithInPlace("aten::tril", lowerTriangle<false>);
  registry.add("aten::fill_diagonal_", lowerFillDiagonal);
  registry.add("aten::pixel_shuffle", lowerPixelShuffle<true>);
  registry.add("aten::pixel_unshuffle", lowerPixelShuffle<false>);
  registry.add("aten::channel_shuffle", lowerChannelShuffle);
  registry.add("aten::native_channel_shuffle", lowerChannelShuffle);
  registry.add("aten::narrow_copy", lowerNarrowCopy);
  registry.add("aten::unfold", lowerUnfold);
  registry.add("aten::im2col", lowerIm2col);
  registry.add("aten::col2im", lowerCol2im);
  registry.add("aten::trace", lowerTrace);
  registry.add("aten::cross", lowerCross);
  registry.add("aten::linalg_cross", lowerCross);
  registry.add("aten::diff", lowerDiff);
  registry.add("aten::atleast_1d", lowerAtLeast<1>);
  registry.add("aten::atleast_2d", lowerAtLeast<2>);
  registry.add("aten::atleast_3d", lowerAtLeast<3>);
  registry.add("aten::cartesian_prod", lowerCartesianProd);
  registry.add("aten::combinations", lowerCombinations);
  registry.add("aten::block_diag", lowerBlockDiag);
  registry.add("aten::vander", lowerVander);
  registry.add("aten::linalg_vander", lowerLinalgVander);
}

} // namespace popsim::frontend::lowerings
