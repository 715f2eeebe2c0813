// torch.as_strided: a view given by sizes and strides over the memory of a
// tensor. popsim keeps no memory layout of its own (its tensors are row-major
// values), so the lowering finds, at compile time, which element of the
// argument sits at each position the view reads, from the strides the trace
// recorded for the argument in eager PyTorch, and picks those elements. The
// gradient is the pick's: an index_add, which sums where windows overlap, as
// eager's as_strided backward does.

#include "common/strings.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"
#include "frontend/view_path.h"

#include <unordered_map>

namespace popsim::frontend::lowerings {
namespace {

void lowerAsStrided(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const std::vector<int64_t> sizes = ctx.toIntList(1);
  const std::vector<int64_t> strides = ctx.toIntList(2);
  if (sizes.size() != strides.size()) {
    ctx.unsupported(strCat("as_strided with ", sizes.size(), " sizes ", listToString(sizes),
                           " but ", strides.size(), " strides ", listToString(strides)));
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) {
      ctx.unsupported(strCat("as_strided with a negative size or stride (sizes ",
                             listToString(sizes), ", strides ", listToString(strides), ")"));
    }
  }
  const std::optional<LoweringContext::MemoryLayout> layout = ctx.memoryLayout(0);
  if (!layout) {
    ctx.unsupported("as_strided of a tensor whose memory layout the graph does not record (a "
                    "scripted model's): trace the model (the default), or use view and "
                    "Tensor.unfold");
  }
  const ir::Shape& shape = x->type().shape;
  // Positions relative to where the argument starts in its memory.
  int64_t start = 0;
  if (!ctx.isNone(3)) {
    const int64_t offset = ctx.toInt(3);
    if (!layout->storageOffset) {
      ctx.unsupported(strCat(
          "as_strided with storage_offset=", offset,
          " of a model input or of a view of another tensor: popsim does not know where that "
          "tensor starts in eager PyTorch's memory; leave storage_offset out (the view then "
          "starts where the tensor starts)"));
    }
    start = offset - *layout->storageOffset;
  }

  // Which of x's elements (row-major) sits at each position of its memory;
  // where several do (a broadcast dimension has stride 0) they hold one value.
  std::unordered_map<int64_t, int64_t> elementAt;
  const std::vector<int64_t> held = stridedPositions(shape, layout->strides, 0);
  for (size_t element = 0; element < held.size(); ++element)
    elementAt.emplace(held[element], static_cast<int64_t>(element));

  std::vector<int64_t> picked;
  for (int64_t position : stridedPositions(sizes, strides, start)) {
    const auto found = elementAt.find(position);
    if (found == elementAt.end()) {
      ctx.unsupported(strCat(
          "as_strided (sizes ", listToString(sizes), ", strides ", listToString(strides),
          ") that reads position ", position, " of the memory of a tensor of shape ",
          listToString(shape), " with strides ", listToString(layout->strides),
          ", which holds none of its elements: popsim keeps only a tensor's own elements, so "
          "a view must stay inside the tensor it is taken of"));
    }
    picked.push_back(found->second);
  }
  ir::Value* flat = reshape(ctx, x, {static_cast<int64_t>(held.size())});
  ir::Value* values =
      ctx.emit(ir::OpKind::IndexSelect, {flat, int64Constant(ctx, picked)}, {{"dim", int64_t{0}}});
  ctx.setOutput(0, reshape(ctx, values, sizes));
}

} // namespace

void registerStridedViews(LoweringRegistry& registry) {
  registry.add("aten::as_strided", lowerAsStrided);
}

} // namespace popsim::frontend::lowerings
