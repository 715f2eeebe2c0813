#pragma once

#include "ir/graph.h"

#include <optional>
#include <vector>

namespace popsim::frontend {

// One layout op of the chain that reads a view out of the tensor it views.
struct ViewStep {
  ir::OpKind kind; // Reshape, Permute, Slice, Broadcast or StopGradient
  ir::Attributes attrs;
};
using ViewPath = std::vector<ViewStep>;

// The chain of layout ops by which a lowering computed `view` from `base`
// (empty when they are the same value), or nullopt when another op is on the
// way: popsim then cannot carry writes through the view back to its base.
std::optional<ViewPath> findViewPath(const ir::Value* base, const ir::Value* view);

// The view `path` of `base`, emitted as layout ops.
ir::Value* readView(ir::Graph& graph, ir::Value* base, const ViewPath& path,
                    const ir::SourceLocation& location);

// `base` after `update` is written into its view `path`, emitted as layout
// ops: each step's inverse (reshape back, the inverse permutation,
// slice_update), from the view back to the base. Throws UnsupportedLowering
// for a write through a broadcast.
ir::Value* writeView(ir::Graph& graph, ir::Value* base, const ViewPath& path, ir::Value* update,
                     const ir::SourceLocation& location);

// The position, in memory laid out from `offset` with `strides`, of each
// element of `shape` in row-major order (as_strided's reads, a view step's).
std::vector<int64_t> stridedPositions(const ir::Shape& shape, const std::vector<int64_t>& strides,
                                      int64_t offset);

// For each element of the view `path` of a tensor of `baseShape` (in
// row-major order), the index of the base element it is.
std::vector<int64_t> viewedElements(const ir::Shape& baseShape, const ViewPath& path);

// Whether an elementwise in-place op writing the view `written` while
// reading the view `read` of the same tensor depends on the order it visits
// elements: an element it reads at one position is written at another (as in
// x[:, 1:] += x[:, :-1]). Eager PyTorch's result then is whatever its kernel
// happens to do.
bool readsWhatItOverwrites(const ir::Shape& baseShape, const ViewPath& written,
                           const ViewPath& read);

} // namespace popsim::frontend
