#pragma once

#include "ir/node.h"

#include <string>

namespace popsim::runtime {

// Rethrows the exception being handled (call it only inside a catch block) as
// a popsim::Error that says which node failed: its op and the user's source
// line first, then its pass and block and `when` (for example "task F0 on
// IPU0, micro-batch 3 of the call"), then the original message. popsim errors
// keep their kind; running out of host memory is an Execution error; oneDNN
// and other C++ exceptions are popsim bugs (Internal).
[[noreturn]] void rethrowFailureOf(const ir::Node& node, const std::string& when);

} // namespace popsim::runtime
