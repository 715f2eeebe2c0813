#pragma once

#include "popsim/errors.h"

#include <c10/util/Exception.h>

#include <string>

namespace popsim::api {

// Throws `error` as the class of popsim/errors.h its kind names (an error
// already of that class is thrown as it is). The core throws plain
// popsim::Error; the public API gives users the class, as Python does.
[[noreturn]] void throwAsErrorClass(const Error& error);

// Throws an OptionError naming `option` (as Python spells it) in its site.
[[noreturn]] void refuseOption(const std::string& option, const std::string& message);

// Runs `body`, turning the popsim::Error it throws into its class, and an
// error LibTorch throws (a module without forward(), say) into a
// CompilationError that quotes it.
template <typename Body> auto withErrorClasses(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& error) {
    throwAsErrorClass(error);
  } catch (const c10::Error& error) {
    throw CompilationError(
        Error(ErrorKind::Compilation, std::string("LibTorch: ") + error.what_without_backtrace()));
  }
}

} // namespace popsim::api
