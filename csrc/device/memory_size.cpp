#include "device/memory_size.h"

#include <cctype>
#include <string_view>
#include <utility>

namespace popsim::device {
namespace {

bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool isLetter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

constexpr std::pair<std::string_view, double> kUnits[] = {
    {"", 1.0},   {"b", 1.0},      {"kb", 1e3},        {"mb", 1e6},
    {"gb", 1e9}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0},
};

} // namespace

std::optional<uint64_t> parseMemorySize(const std::string& text) {
  size_t at = 0;
  while (at < text.size() && isSpace(text[at]))
    ++at;
  // digits, then at most one '.', then at least one digit
  const size_t numberStart = at;
  while (at < text.size() && isDigit(text[at]))
    ++at;
  if (at < text.size() && text[at] == '.') ++at;
  const size_t fractionStart = at;
  while (at < text.size() && isDigit(text[at]))
    ++at;
  if (at == fractionStart) {
    // No digit after the point (or no point): the number must end in the
    // integer part, which then needs a digit.
    if (at > numberStart && text[at - 1] == '.') return std::nullopt;
    if (at == numberStart) return std::nullopt;
  }
  const std::string number = text.substr(numberStart, at - numberStart);
  while (at < text.size() && isSpace(text[at]))
    ++at;
  std::string unit;
  while (at < text.size() && isLetter(text[at]))
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[at++])));
  while (at < text.size() && isSpace(text[at]))
    ++at;
  if (at != text.size()) return std::nullopt;
  for (const auto& [name, factor] : kUnits) {
    if (name == unit) {
      const double bytes = std::stod(number) * factor;
      // Under a byte, or more than 64 bits hold (the conversion would be undefined).
      if (bytes < 1 || bytes >= 18446744073709551616.0) return std::nullopt;
      return static_cast<uint64_t>(bytes);
    }
  }
  return std::nullopt;
}

} // namespace popsim::device
