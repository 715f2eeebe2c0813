#pragma once

// ErrorKind, ErrorSite and Error are public (include/popsim/errors.h): the
// core throws popsim::Error, and the public API and the Python bindings give
// users the class its kind names.
#include "popsim/errors.h"

#include <string>

namespace popsim {

[[noreturn]] void throwError(ErrorKind kind, const std::string& message);

// An InvalidOption error about `option` (as Python spells it,
// "Training.gradientAccumulation"), which its site names.
[[noreturn]] void throwOptionError(const std::string& option, const std::string& message);

} // namespace popsim
