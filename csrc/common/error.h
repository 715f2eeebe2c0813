#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace popsim {

// What went wrong, from the user's point of view. The Python bindings map each
// kind to a class of the popsim.Error hierarchy (python/popsim/errors.py).
enum class ErrorKind {
  Internal,      // a bug in popsim: an invariant did not hold
  Unsupported,   // the model uses something popsim cannot run
  OutOfMemory,   // a simulated IPU's memory is too small for the program
  InvalidInput,  // model inputs do not match what was compiled
  InvalidOption, // an option has a bad value or combination
  Compilation,   // the model could not be turned into a program
  Execution,     // running the program failed (e.g. an index out of range)
  InvalidFile,   // a compiled program file is damaged, foreign or for another model
};

const char* errorKindName(ErrorKind kind);

// Where in a program an error happened, when it happened in one op (a kernel
// failing as it is built or runs): the op, the user's source line and where
// it ran. Empty strings and -1 where unknown. The message says all of it too;
// these let code (and the Python error's attributes) read it.
struct ErrorSite {
  std::string node;   // how errors name the op: "convolution at model.py:12"
  std::string op;     // its kind: "convolution"
  std::string source; // the user's source line: "model.py:12"
  std::string block;  // its pipeline block
  std::string task;   // the pipeline task it ran in: "F0", "B1", ...
  int64_t ipu = -1;
  int64_t microBatch = -1; // in the call
  int64_t replica = -1;
  bool known() const { return !node.empty(); }
};

// The one exception type popsim throws. Messages are written for users: they
// name the thing at fault, the expected and actual values and what to do.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message, ErrorSite site = {});
  ErrorKind kind() const { return kind_; }
  const ErrorSite& site() const { return site_; }

private:
  ErrorKind kind_;
  ErrorSite site_;
};

[[noreturn]] void throwError(ErrorKind kind, const std::string& message);

} // namespace popsim
