#pragma once

#include "ir/source_location.h"

#include <string>
#include <vector>

namespace torch::jit {
struct Node;
}

namespace popsim::frontend {

// The user's source line of a traced node: the first frame of the Python
// stack the tracer recorded whose file contains none of `libraryPaths`.
ir::SourceLocation userSourceLocation(const torch::jit::Node& node,
                                      const std::vector<std::string>& libraryPaths);

// Parses a recorded stack ("file.py(12): forward" per line, innermost first).
ir::SourceLocation parseTracedStack(const std::string& stack,
                                    const std::vector<std::string>& libraryPaths);

} // namespace popsim::frontend
