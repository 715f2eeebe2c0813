#pragma once

#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
} // namespace torch::jit

namespace popsim::frontend {

// Slices whose bounds the model computes from its data, `t[e : e + n : s]`
// with `e` a tensor: the trace records each bound as aten::Int of a tensor,
// a number a compiled program cannot have. When both bounds are one tensor
// plus constants the length is a constant, so the slice becomes an
// index_select of start + [0, s, 2s, ...] below n (its range checked when the
// program runs), as popsim.dynamic_slice computes it; so does
// `t.narrow(dim, e, n)`. Bounds that depend only on shapes and constants are
// left to the importer, which folds them.
//
// Throws a Compilation error, naming the slice's source line, for a slice
// whose length would change from call to call (bounds from different
// tensors, or one from a tensor and one constant), an empty or reversed
// range, and a write through such a slice (which an index_select, not being
// a view, would drop).
void rewriteTensorBoundSlices(torch::jit::Graph& graph,
                              const std::vector<std::string>& libraryPaths);

} // namespace popsim::frontend
