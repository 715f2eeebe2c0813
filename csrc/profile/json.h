#pragma once

// Profiles are JSON documents whose keys keep the order they are written in
// (readers and diffs see the same layout every time): nlohmann's ordered_json.
#include <nlohmann/json.hpp>

#include <string>

namespace popsim::profile {

using Json = nlohmann::ordered_json;

// The JSON text of `value`, compact or with `indent` spaces per level. Bytes
// that are not UTF-8 (a source path in another encoding, say) become U+FFFD
// rather than failing the profile.
inline std::string jsonText(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

} // namespace popsim::profile
