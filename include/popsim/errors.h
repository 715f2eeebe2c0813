#pragma once

// popsim's errors, as C++ exceptions. Every error popsim throws is a
// popsim::Error; the public API (popsim/session.h) throws the subclass its
// kind names, the same classes as Python's popsim.Error hierarchy, with the
// same messages: a message names the thing at fault (op and source line,
// input, option, block, IPU), the expected and actual values and what to do.

#include "popsim/memory_report.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace popsim {

// What went wrong, from the user's point of view; each kind has its class
// below (and in Python, its class of python/popsim/errors.py).
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

// Where an error happened and what it is about, as fields: the message says
// all of it too; these let code read it. Empty strings, -1, 0 and empty lists
// where unknown (Python's attributes are None there). Python's errors have
// the same fields under snake_case names (popsim.OutOfMemoryError the memory
// ones).
struct ErrorSite {
  // An error in one op (a kernel failing as it is built or runs): the op, the
  // user's source line and where it ran.
  std::string node;        // how errors name the op: "convolution at model.py:12"
  std::string op;          // its kind: "convolution"
  std::string source;      // the user's source line: "model.py:12"
  std::string block;       // its pipeline block
  std::string task;        // the pipeline task it ran in: "F0", "B1", ...
  int64_t ipu = -1;        // also the IPU an out-of-memory error is about
  int64_t microBatch = -1; // in the call
  int64_t replica = -1;
  // An option error: the option at fault, as Python spells it
  // ("Training.gradientAccumulation", "Simulator.memoryPerIpu").
  std::string option;
  // Out of memory on `ipu`: the category that needs the most of it
  // ("activations"; "IO tiles" when the IO tiles overflow), what the program
  // needs and what the IPU has, and its largest tensors (largest first).
  std::string category;
  uint64_t requiredBytes = 0;
  uint64_t capacityBytes = 0;
  std::vector<TensorMemory> largestTensors;
  bool inOp() const { return !node.empty(); }
};

// The base class of every popsim error.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message, ErrorSite site = {});
  ErrorKind kind() const { return kind_; }
  const ErrorSite& site() const { return site_; }

private:
  ErrorKind kind_;
  ErrorSite site_;
};

// The model uses ops popsim cannot run; the message lists each one with its
// source line.
class UnsupportedOperationError : public Error {
public:
  explicit UnsupportedOperationError(const Error& error) : Error(error) {}
};

// A simulated IPU's memory is too small for the program; the message names
// the IPU, the bytes needed and available, each category and the largest
// tensors, which site() holds as fields (ipu, category, requiredBytes,
// capacityBytes, largestTensors).
class OutOfMemoryError : public Error {
public:
  explicit OutOfMemoryError(const Error& error) : Error(error) {}
};

// Inputs do not match what the model was compiled for.
class InputError : public Error {
public:
  explicit InputError(const Error& error) : Error(error) {}
};

// An option has a bad value, or options do not fit together; site().option
// names it.
class OptionError : public Error {
public:
  explicit OptionError(const Error& error) : Error(error) {}
};

// The model could not be turned into a program for another reason.
class CompilationError : public Error {
public:
  explicit CompilationError(const Error& error) : Error(error) {}
};

// Running the compiled program failed (an index out of range, say); site()
// names the op, its source line, the task, IPU and micro-batch.
class ExecutionError : public Error {
public:
  explicit ExecutionError(const Error& error) : Error(error) {}
};

// A compiled program file is damaged, foreign or for another model.
class ExecutableFileError : public Error {
public:
  explicit ExecutableFileError(const Error& error) : Error(error) {}
};

// A bug in popsim; please report it with the message.
class InternalError : public Error {
public:
  explicit InternalError(const Error& error) : Error(error) {}
};

} // namespace popsim
