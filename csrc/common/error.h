#pragma once

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

// The one exception type popsim throws. Messages are written for users: they
// name the thing at fault, the expected and actual values and what to do.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }

private:
  ErrorKind kind_;
};

[[noreturn]] void throwError(ErrorKind kind, const std::string& message);

} // namespace popsim
