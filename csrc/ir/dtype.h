#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace popsim::ir {

// Element types popsim programs compute with. Float32 and Float16 are the
// compute types (real numbers); the integer types carry indices (embedding
// ids, class labels) and counters; Float64 holds optimizer hyper-parameters
// exactly as Python gives them.
enum class DType : uint8_t { Float32, Int32, Int64, Bool, Float64, Float16 };

// Bytes per element on the simulated IPU (float16 takes 2).
size_t elementSize(DType dtype);
// Whether a tensor of this type holds real numbers the ops compute with.
bool isFloat(DType dtype);
// How the host holds an element: float16 values live in float32 carriers
// (always exactly representable in float16), so every kernel computes in
// float32 and the runtime rounds float16 results (see kernels/half_rounding.h).
DType storageDType(DType dtype);
inline size_t storageSize(DType dtype) { return elementSize(storageDType(dtype)); }
// Short names used by the IR printer: f32, f16, i32, i64, bool, f64.
const char* dtypeName(DType dtype);
// The dtype a short name names, if any.
std::optional<DType> dtypeFromName(std::string_view name);

} // namespace popsim::ir
