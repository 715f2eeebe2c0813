#pragma once

// Profiles are JSON documents whose keys keep the order they are written in
// (readers and diffs see the same layout every time): nlohmann's ordered_json.
#include <nlohmann/json.hpp>

namespace popsim::profile {

using Json = nlohmann::ordered_json;

} // namespace popsim::profile
