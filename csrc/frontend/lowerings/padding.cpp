// Padding (F.pad and the padding modules): constant (negative widths crop),
// reflect, replicate and circular, each dimension padded by concatenating
// slices (or constants) of the tensor to it, so gradients follow from the
// slices' and concatenation's.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

enum class PadMode { Constant, Reflect, Replicate, Circular };

// x with dimension dim of `size` (x's is 1), by broadcasting.
ir::Value* withSize(LoweringContext& ctx, ir::Value* x, int64_t dim, int64_t size) {
  ir::Shape shape = x->type().shape;
  shape[static_cast<size_t>(dim)] = size;
  return broadcastTo(ctx, x, shape);
}

// The `width` elements added before (`before`) or after x along dim.
std::vector<ir::Value*> padding(LoweringContext& ctx, ir::Value* x, int64_t dim, int64_t width,
                                bool before, PadMode mode, double value) {
  const int64_t size = x->type().shape[static_cast<size_t>(dim)];
  std::vector<ir::Value*> pieces;
  switch (mode) {
  case PadMode::Constant: {
    ir::TensorType type = x->type();
    type.shape[static_cast<size_t>(dim)] = width;
    pieces.push_back(constantFilled(ctx, type, value));
    break;
  }
  case PadMode::Reflect: // x[width], ..., x[1] before; x[size - 2], ... after
    for (int64_t i = 0; i < width; ++i) {
      const int64_t source = before ? width - i : size - 2 - i;
      pieces.push_back(sliceAlong(ctx, x, dim, source, source + 1));
    }
    break;
  case PadMode::Replicate:
    pieces.push_back(withSize(
        ctx, sliceAlong(ctx, x, dim, before ? 0 : size - 1, before ? 1 : size), dim, width));
    break;
  case PadMode::Circular: // the other end's elements
    pieces.push_back(before ? sliceAlong(ctx, x, dim, size - width, size)
                            : sliceAlong(ctx, x, dim, 0, width));
    break;
  }
  return pieces;
}

const char* modeName(PadMode mode) {
  switch (mode) {
  case PadMode::Constant: return "constant";
  case PadMode::Reflect: return "reflect";
  case PadMode::Replicate: return "replicate";
  case PadMode::Circular: return "circular";
  }
  return "";
}

// x padded as F.pad(x, pads, mode, value): pads holds (before, after) pairs
// from the last dimension backwards.
ir::Value* padded(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& pads,
                  PadMode mode, double value) {
  const int64_t rank = x->type().rank();
  if (pads.size() % 2 != 0 || static_cast<int64_t>(pads.size()) / 2 > rank) {
    ctx.unsupported("padding widths " + listToString(pads) + " for a tensor of rank " +
                    std::to_string(rank) + "; give a (before, after) pair for each of at most " +
                    std::to_string(rank) + " trailing dimensions");
  }
  for (size_t pair = 0; pair < pads.size() / 2; ++pair) {
    const int64_t dim = rank - 1 - static_cast<int64_t>(pair);
    int64_t before = pads[2 * pair];
    int64_t after = pads[2 * pair + 1];
    const int64_t size = x->type().shape[static_cast<size_t>(dim)];
    if (mode == PadMode::Constant) { // negative widths crop
      x = sliceAlong(ctx, x, dim, std::max<int64_t>(0, -before),
                     size - std::max<int64_t>(0, -after));
      before = std::max<int64_t>(0, before);
      after = std::max<int64_t>(0, after);
    }
    const int64_t limit = mode == PadMode::Reflect ? size - 1 : size;
    if (before < 0 || after < 0 ||
        (mode != PadMode::Constant && mode != PadMode::Replicate &&
         (before > limit || after > limit))) {
      ctx.unsupported(std::string(modeName(mode)) + " padding of (" + std::to_string(before) +
                      ", " + std::to_string(after) + ") for dimension " + std::to_string(dim) +
                      " of size " + std::to_string(size) + ": the widths must be between 0 and " +
                      std::to_string(limit));
    }
    if (before == 0 && after == 0) continue;
    std::vector<ir::Value*> pieces;
    if (before > 0) pieces = padding(ctx, x, dim, before, true, mode, value);
    pieces.push_back(x);
    if (after > 0) {
      for (ir::Value* piece : padding(ctx, x, dim, after, false, mode, value))
        pieces.push_back(piece);
    }
    x = ctx.emit(ir::OpKind::Concat, pieces, {{"dim", dim}});
  }
  return x;
}

PadMode modeNamed(LoweringContext& ctx, const std::string& name) {
  if (name == "constant") return PadMode::Constant;
  if (name == "reflect") return PadMode::Reflect;
  if (name == "replicate") return PadMode::Replicate;
  if (name == "circular") return PadMode::Circular;
  ctx.unsupported("padding mode '" + name +
                  "'; the modes are 'constant', 'reflect', 'replicate' and 'circular'");
}

// aten::pad(self, pad, mode="constant", value=None).
void lowerPad(LoweringContext& ctx) {
  const PadMode mode = ctx.numInputs() > 2 ? modeNamed(ctx, ctx.toString(2)) : PadMode::Constant;
  const double value = ctx.numInputs() > 3 && !ctx.isNone(3) ? ctx.toDouble(3) : 0.0;
  ctx.setOutput(0, padded(ctx, ctx.tensor(0), ctx.toIntList(1), mode, value));
}

// aten::constant_pad_nd(self, pad, value=0).
void lowerConstantPad(LoweringContext& ctx) {
  const double value = ctx.numInputs() > 2 ? ctx.toDouble(2) : 0.0;
  ctx.setOutput(0, padded(ctx, ctx.tensor(0), ctx.toIntList(1), PadMode::Constant, value));
}

// aten::reflection_padNd / replication_padNd(self, padding).
template <PadMode Mode> void lowerModePad(LoweringContext& ctx) {
  ctx.setOutput(0, padded(ctx, ctx.tensor(0), ctx.toIntList(1), Mode, 0.0));
}

// aten::pad_sequence(sequences, batch_first=False, padding_value=0.0)
// (torch.nn.utils.rnn.pad_sequence): each sequence padded after its end to
// the longest one's length, then stacked along dim 0 (batch_first) or 1.
void lowerPadSequence(LoweringContext& ctx) {
  std::vector<ir::Value*> sequences = withCommonDType(ctx, ctx.tensorList(0));
  if (sequences.empty()) ctx.unsupported("pad_sequence of an empty list");
  const int64_t dim = ctx.toBool(1) ? 0 : 1;
  const double value = ctx.toDouble(2);
  int64_t longest = 0;
  for (const ir::Value* sequence : sequences) {
    if (sequence->type().rank() == 0) ctx.unsupported("pad_sequence of a 0-d tensor");
    longest = std::max(longest, sequence->type().shape[0]);
  }
  for (ir::Value*& sequence : sequences) {
    const int64_t rank = sequence->type().rank();
    std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0); // the last dim's first
    pads.back() = longest - sequence->type().shape[0];
    sequence = padded(ctx, sequence, pads, PadMode::Constant, value);
    ir::Shape shape = sequence->type().shape;
    shape.insert(shape.begin() + dim, 1);
    sequence = reshape(ctx, sequence, shape);
  }
  ctx.setOutput(0, sequences.size() == 1 ? sequences[0]
                                         : ctx.emit(ir::OpKind::Concat, sequences, {{"dim", dim}}));
}

} // namespace

void registerPadding(LoweringRegistry& registry) {
  registry.add("aten::pad_sequence", lowerPadSequence);
  registry.add("aten::pad", lowerPad);
  registry.add("aten::constant_pad_nd", lowerConstantPad);
  for (const char* n : {"1d", "2d", "3d"}) {
    registry.add(std::string("aten::reflection_pad") + n, lowerModePad<PadMode::Reflect>);
    registry.add(std::string("aten::replication_pad") + n, lowerModePad<PadMode::Replicate>);
  }
}

} // namespace popsim::frontend::lowerings
