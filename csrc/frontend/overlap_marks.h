#pragma once

#include "ir/host_overlap.h"

#include <map>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
struct Value;
} // namespace torch::jit

namespace popsim::frontend {

// The host overlap a model asks for with popsim.set_overlap_for_input and
// set_overlap_for_output (PopTorch's), read from the traced graph's
// popsim::set_overlap_for_input / _output marker ops:
// - inputs: the graph inputs the markers take;
// - outputs: the markers' results, which the model returns.
struct OverlapMarks {
  std::map<const torch::jit::Value*, ir::HostOverlap> inputs;
  std::map<const torch::jit::Value*, ir::HostOverlap> outputs;
};

// Throws a Compilation error, with PopTorch's wording and where the marker
// is, when a marker is not the only op applied to a model input, marks
// something other than an input or returned tensor, or marks a tensor the
// model returns twice.
OverlapMarks collectOverlapMarks(const torch::jit::Graph& graph,
                                 const std::vector<std::string>& libraryPaths);

} // namespace popsim::frontend
