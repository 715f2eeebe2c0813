#pragma once

// Session options as JSON text and back: every field, by its C++ name, so
// that options can be stored (a pickled popsim.Options holds this text) and
// read back by either face without running code.

#include "host/session_options.h"

#include <string>

namespace popsim::host {

std::string sessionOptionsToJson(const SessionOptions& options);
// Throws InvalidOption naming the field for text that is not session
// options; fields the text lacks keep their defaults.
SessionOptions sessionOptionsFromJson(const std::string& text);

} // namespace popsim::host
