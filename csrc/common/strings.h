#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace popsim {

// Concatenates anything that has an operator<< into a string.
template <typename... Parts> std::string strCat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Joins the elements of a range with a separator, each through operator<<.
template <typename Range> std::string join(const Range& items, std::string_view separator) {
  std::ostringstream out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) {
      out << separator;
    }
    out << item;
    first = false;
  }
  return out.str();
}

// "[1, 2, 3]" for a list of integers.
std::string listToString(const std::vector<int64_t>& values);

// 1234567 -> "1,234,567".
std::string withThousandsSeparators(uint64_t value);

// 1234567 -> "1,234,567 bytes (1.18 MiB)": exact for comparisons, readable too.
std::string formatBytes(uint64_t bytes);

bool startsWith(std::string_view text, std::string_view prefix);

// The lines of `text`, without their '\n' (a text ending in '\n' ends with
// an empty line), viewing `text`.
std::vector<std::string_view> splitLines(std::string_view text);

} // namespace popsim
