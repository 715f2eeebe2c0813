#pragma once

#include "ir/graph.h"

#include <string>
#include <vector>

namespace popsim::ir {

// Every broken invariant of the graph, one message each (empty when valid):
// operands defined before use and owned by the graph, use-def links in both
// directions, arity and attributes as the schema says, output types equal to
// what the schema infers, unique weight names, constant sizes, outputs defined.
std::vector<std::string> findGraphProblems(const Graph& graph);

// Throws an internal error listing all problems. Passes call it after running
// because a broken graph is a popsim bug, not a user error.
void verifyGraph(const Graph& graph, const std::string& context = "");

} // namespace popsim::ir
