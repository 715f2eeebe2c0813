#pragma once

// popsim's errors, as C++ exceptions. Every error the public API
// (popsim/session.h) throws is a popsim::Error of the subclass its kind
// names, the same classes as Python's popsim.Error hierarchy, with the same
// messages: a message names the thing at fault (op and source line, input,
// option, block, IPU), the expected and actual values and what to do.
// popsim::Error is a c10::Error, so that a LibTorch program's
// `catch (const c10::Error&)` (and `catch (const std::exception&)`) catches
// popsim's errors too; what() and what_without_backtrace() give the message.

#include "popsim/error_site.h"

#include <c10/util/Exception.h>

#include <string>

namespace popsim {

/// The base class of every popsim error.
class Error : public c10::Error {
public:
  Error(ErrorKind kind, const std::string& message, ErrorSite site = {});
  /// The message alone, as Python's str(error) (c10::Error's what() would
  /// append a line for a backtrace, which popsim's errors do not carry).
  const char* what() const noexcept override { return what_without_backtrace(); }
  ErrorKind kind() const { return kind_; }
  const ErrorSite& site() const { return site_; }

private:
  ErrorKind kind_;
  ErrorSite site_;
};

/// The model uses ops popsim cannot run; the message lists each one with its
/// source line.
class UnsupportedOperationError : public Error {
public:
  explicit UnsupportedOperationError(const Error& error) : Error(error) {}
};

/// A simulated IPU's memory is too small for the program; the message names
/// the IPU, the bytes needed and available, each category and the largest
/// tensors, which site() holds as fields (ipu, category, requiredBytes,
/// capacityBytes, largestTensors).
class OutOfMemoryError : public Error {
public:
  explicit OutOfMemoryError(const Error& error) : Error(error) {}
};

/// Inputs do not match what the model was compiled for.
class InputError : public Error {
public:
  explicit InputError(const Error& error) : Error(error) {}
};

/// An option has a bad value, or options do not fit together; site().option
/// names it.
class OptionError : public Error {
public:
  explicit OptionError(const Error& error) : Error(error) {}
};

/// The model could not be turned into a program for another reason.
class CompilationError : public Error {
public:
  explicit CompilationError(const Error& error) : Error(error) {}
};

/// Running the compiled program failed (an index out of range, say); site()
/// names the op, its source line, the task, IPU and micro-batch.
class ExecutionError : public Error {
public:
  explicit ExecutionError(const Error& error) : Error(error) {}
};

/// A compiled program file is damaged, foreign or for another model.
class ExecutableFileError : public Error {
public:
  explicit ExecutableFileError(const Error& error) : Error(error) {}
};

/// A bug in popsim; please report it with the message.
class InternalError : public Error {
public:
  explicit InternalError(const Error& error) : Error(error) {}
};

} // namespace popsim
