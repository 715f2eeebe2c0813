#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace popsim::device {

// Bytes from a size as users write memoryPerIpu: a number ("64", "1.5",
// ".5"), then an optional unit (B; KB, MB, GB in powers of 1000; KiB, MiB,
// GiB in powers of 1024; any case), with white space around either. None for
// text that is no such size, or a size under one byte or beyond 64 bits. Python's Options and
// the C++ API both parse with it, so they accept the same sizes.
std::optional<uint64_t> parseMemorySize(const std::string& text);

} // namespace popsim::device
