#include "common/error.h"

namespace popsim {

const char* errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Internal: return "Internal";
  case ErrorKind::Unsupported: return "Unsupported";
  case ErrorKind::OutOfMemory: return "OutOfMemory";
  case ErrorKind::InvalidInput: return "InvalidInput";
  case ErrorKind::InvalidOption: return "InvalidOption";
  case ErrorKind::Compilation: return "Compilation";
  case ErrorKind::Execution: return "Execution";
  case ErrorKind::InvalidFile: return "InvalidFile";
  }
  return "Unknown";
}

CoreError::CoreError(ErrorKind kind, const std::string& message, ErrorSite site)
    : std::runtime_error(message), kind_(kind), site_(std::move(site)) {}

void throwError(ErrorKind kind, const std::string& message) { throw CoreError(kind, message); }

void throwOptionError(const std::string& option, const std::string& message) {
  ErrorSite site;
  site.option = option;
  throw CoreError(ErrorKind::InvalidOption, message, std::move(site));
}

} // namespace popsim
