#include "api/error_classes.h"

#include "api/cpp_spelling.h"

namespace popsim {

Error::Error(ErrorKind kind, const std::string& message, ErrorSite site)
    : c10::Error(message, /*backtrace=*/""), kind_(kind), site_(std::move(site)) {}

} // namespace popsim

namespace popsim::api {

void throwAsErrorClass(const CoreError& core) {
  const Error error(core.kind(), inCppSpelling(core.what()), core.site());
  switch (error.kind()) {
  case ErrorKind::Unsupported: throw UnsupportedOperationError(error);
  case ErrorKind::OutOfMemory: throw OutOfMemoryError(error);
  case ErrorKind::InvalidInput: throw InputError(error);
  case ErrorKind::InvalidOption: throw OptionError(error);
  case ErrorKind::Compilation: throw CompilationError(error);
  case ErrorKind::Execution: throw ExecutionError(error);
  case ErrorKind::InvalidFile: throw ExecutableFileError(error);
  case ErrorKind::Internal: throw InternalError(error);
  }
  throw InternalError(error);
}

void refuseOption(const std::string& option, const std::string& message) {
  ErrorSite site;
  site.option = option;
  throw OptionError(Error(ErrorKind::InvalidOption, inCppSpelling(message), std::move(site)));
}

} // namespace popsim::api
