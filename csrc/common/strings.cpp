#include "common/strings.h"

#include <array>
#include <cstdio>

namespace popsim {

std::string listToString(const std::vector<int64_t>& values) {
  return "[" + join(values, ", ") + "]";
}

std::string withThousandsSeparators(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return out;
}

std::string formatBytes(uint64_t bytes) {
  static const std::array<const char*, 4> units = {"KiB", "MiB", "GiB", "TiB"};
  std::string text = withThousandsSeparators(bytes) + " bytes";
  if (bytes < 1024) {
    return text;
  }
  double scaled = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (scaled >= 1024.0 && unit + 1 < units.size()) {
    scaled /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), " (%.2f %s)", scaled, units[unit]);
  return text + buffer;
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

} // namespace popsim
