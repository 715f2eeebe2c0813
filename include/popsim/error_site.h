#pragma once

// What popsim's errors are about, as fields: their kind and site. Shared by
// the public error classes (popsim/errors.h) and popsim's core, which builds
// without LibTorch.

#include "popsim/memory_report.h"

#include <cstdint>
#include <string>
#include <vector>

namespace popsim {

/// What went wrong, from the user's point of view; each kind has its class in
/// popsim/errors.h (and in Python, its class of python/popsim/errors.py).
enum class ErrorKind {
  Internal,      ///< a bug in popsim: an invariant did not hold
  Unsupported,   ///< the model uses something popsim cannot run
  OutOfMemory,   ///< a simulated IPU's memory is too small for the program
  InvalidInput,  ///< model inputs do not match what was compiled
  InvalidOption, ///< an option has a bad value or combination
  Compilation,   ///< the model could not be turned into a program
  Execution,     ///< running the program failed (e.g. an index out of range)
  InvalidFile,   ///< a compiled program file is damaged, foreign or for another model
};

const char* errorKindName(ErrorKind kind);

/// Where an error happened and what it is about, as fields: the message says
/// all of it too; these let code read it. Empty strings, -1, 0 and empty lists
/// where unknown (Python's attributes are None there). Python's errors have
/// the same fields under snake_case names (popsim.OutOfMemoryError the memory
/// ones).
struct ErrorSite {
  /// An error in one op (a kernel failing as it is built or runs): the op, the
  /// user's source line and where it ran.
  std::string node;        ///< how errors name the op: "convolution at model.py:12"
  std::string op;          ///< its kind: "convolution"
  std::string source;      ///< the user's source line: "model.py:12"
  std::string block;       ///< its pipeline block
  std::string task;        ///< the pipeline task it ran in: "F0", "B1", ...
  int64_t ipu = -1;        ///< also the IPU an out-of-memory error is about
  int64_t microBatch = -1; ///< in the call
  int64_t replica = -1;
  /// An option error: the option at fault, as Python spells it
  /// ("Training.gradientAccumulation", "Simulator.memoryPerIpu").
  std::string option;
  /// Out of memory on `ipu`: the category that needs the most of it
  /// ("activations"; "IO tiles" when the IO tiles overflow), what the program
  /// needs and what the IPU has, and its largest tensors (largest first).
  std::string category;
  uint64_t requiredBytes = 0;
  uint64_t capacityBytes = 0;
  std::vector<TensorMemory> largestTensors;
  bool inOp() const { return !node.empty(); }
};

} // namespace popsim
