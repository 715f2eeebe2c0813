#pragma once

#include "ir/graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace popsim::ir {

// A graph as bytes and back, for compiled programs kept on disk (executable
// caching, compileAndExport). The bytes start with a magic string, a format
// version and a checksum of the rest; op kinds and dtypes are stored by name.
// Reading checks all of these and every value reference, re-infers each
// node's output types and verifies the graph, so a damaged or foreign file
// is an ErrorKind::InvalidFile error, never a different program.
// 2: host overlap of inputs and outputs; 3: recomputed placements; 4:
// inputs streamed at their own width; 5: adam_update's bias_correction and
// rmsprop_update's tf_variant; 6: nodes the IPU runs in float16.
inline constexpr uint32_t kGraphFormatVersion = 6;

// `withStacks` false leaves out each location's whole Python stack (which
// differs with the call site of an unchanged model): the form program keys hash.
std::string serializeGraph(const Graph& graph, bool withStacks = true);
std::unique_ptr<Graph> deserializeGraph(std::string_view bytes);

} // namespace popsim::ir
