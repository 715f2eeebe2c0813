#pragma once

// ErrorKind and ErrorSite are public (include/popsim/error_site.h). The core
// throws CoreError, a plain std::runtime_error, since it builds without
// LibTorch; the public API (api/error_classes.h) and the Python bindings give
// users the class its kind names, in C++ a popsim::Error, which is a
// c10::Error.
#include "popsim/error_site.h"

#include <stdexcept>
#include <string>

namespace popsim {

class CoreError : public std::runtime_error {
public:
  CoreError(ErrorKind kind, const std::string& message, ErrorSite site = {});
  ErrorKind kind() const { return kind_; }
  const ErrorSite& site() const { return site_; }

private:
  ErrorKind kind_;
  ErrorSite site_;
};

[[noreturn]] void throwError(ErrorKind kind, const std::string& message);

// An InvalidOption error about `option` (as Python spells it,
// "Training.gradientAccumulation"), which its site names.
[[noreturn]] void throwOptionError(const std::string& option, const std::string& message);

} // namespace popsim
