#pragma once

#include "ir/graph.h"

#include <memory>
#include <string_view>

namespace popsim::ir {

// Reads a graph from the text printGraph writes: the printer's inverse.
// printGraph(*parseGraph(printGraph(g, full)), full) == printGraph(g, full)
// for every graph, with PrintOptions::full (whose text holds everything:
// exact numbers, every constant value, blocks, per-op
// availableMemoryProportion, input updates); text printed without it parses
// too unless it abbreviates a constant ("<N values>"). Every node's output
// types are inferred from its op's schema and must match the text, so a
// hand-written file is checked as the compiler checks graphs. Errors are
// InvalidInput errors naming the line, the column and what was expected.
// Lines starting with '#' are comments.
std::unique_ptr<Graph> parseGraph(std::string_view text);

// Prints `graph` in the full form, reads it back and prints that: an
// internal error naming `where` (a pass) unless the two texts agree. The
// pass pipeline runs it after every pass when POPSIM_CHECK_IR_TEXT=1, so
// the tests check the printer and the parser on every graph they compile.
void checkTextRoundTrip(const Graph& graph, const std::string& where);

} // namespace popsim::ir
