#pragma once

#include "ir/node.h"

#include <string>

namespace popsim::runtime {

// When a node failed: what the runtime was doing ("building its kernel for
// IPU0", "task F0 on IPU0, micro-batch 3 of the call") and, running, the
// task, IPU, micro-batch and replica (-1 where none).
struct FailureWhen {
  std::string doing;
  std::string task;
  int64_t ipu = -1;
  int64_t microBatch = -1;
  int64_t replica = -1;
};

// Rethrows the exception being handled (call it only inside a catch block) as
// a popsim::CoreError that says which node failed: its op and the user's source
// line first, then its pass and block and what the runtime was doing, then
// the original message; the error's site holds the same fields. popsim errors
// keep their kind; running out of host memory is an Execution error; oneDNN
// and other C++ exceptions are popsim bugs (Internal).
[[noreturn]] void rethrowFailureOf(const ir::Node& node, const FailureWhen& when);

} // namespace popsim::runtime
