#pragma once

#include "common/error.h"
#include "popsim/errors.h"

#include <c10/util/Exception.h>

#include <string>

namespace popsim::api {

// Throws the core's `error` as the class of popsim/errors.h its kind names,
// with its message and site: the core throws CoreError (it builds without
// LibTorch); the public API gives users the class, a c10::Error, as Python
// gives its class.
[[noreturn]] void throwAsErrorClass(const CoreError& error);

// Throws an OptionError naming `option` (as Python spells it) in its site.
[[noreturn]] void refuseOption(const std::string& option, const std::string& message);

// Runs `body`, turning the CoreError it throws into its class, and an error
// LibTorch throws (a module without forward(), say) into a CompilationError
// that quotes it. popsim's own classes, c10::Errors too, pass as they are.
template <typename Body> auto withErrorClasses(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const CoreError& error) {
    throwAsErrorClass(error);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& error) {
    throw CompilationError(
        Error(ErrorKind::Compilation, std::string("LibTorch: ") + error.what_without_backtrace()));
  }
}

} // namespace popsim::api
