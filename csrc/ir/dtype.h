#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace popsim::ir {

// Element types popsim programs compute with. Float32 is the compute type;
// the integer types carry indices (embedding ids, class labels) and counters;
// Float64 holds optimizer hyper-parameters exactly as Python gives them.
enum class DType : uint8_t { Float32, Int32, Int64, Bool, Float64 };

size_t elementSize(DType dtype);
// Short names used by the IR printer: f32, i32, i64, bool, f64.
const char* dtypeName(DType dtype);
// The dtype a short name names, if any.
std::optional<DType> dtypeFromName(std::string_view name);

} // namespace popsim::ir
