#pragma once

#include "popsim/errors.h"

namespace popsim::api {

// Throws `error` as the class of popsim/errors.h its kind names (an error
// already of that class is thrown as it is). The core throws plain
// popsim::Error; the public API gives users the class, as Python does.
[[noreturn]] void throwAsErrorClass(const Error& error);

// Runs `body`, turning the popsim::Error it throws into its class.
template <typename Body> auto withErrorClasses(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& error) {
    throwAsErrorClass(error);
  }
}

} // namespace popsim::api
