#include "profile/text_format.h"

#include <algorithm>
#include <cstdio>

namespace popsim::profile {
namespace {

std::string printed(const char* format, double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, digits, value);
  return buffer;
}

// Thousands separators in the integer part of a printed number.
std::string group(const std::string& number) {
  size_t begin = number.front() == '-' ? 1 : 0;
  size_t end = number.find('.');
  if (end == std::string::npos) end = number.size();
  std::string result = number.substr(0, begin);
  for (size_t i = begin; i < end; ++i) {
    result += number[i];
    const size_t left = end - i - 1;
    if (left > 0 && left % 3 == 0) result += ',';
  }
  return result + number.substr(end);
}

} // namespace

std::string grouped(long long value) { return group(std::to_string(value)); }

std::string groupedFixed(double value, int decimals) {
  return group(printed("%.*f", value, decimals));
}

std::string fixed(double value, int decimals) { return printed("%.*f", value, decimals); }

std::string percent(double fraction, int decimals) {
  // Python multiplies by 100 in double precision too.
  return printed("%.*f", fraction * 100.0, decimals) + "%";
}

std::string general(double value, int precision) { return printed("%.*g", value, precision); }

std::string mib(double bytes) { return groupedFixed(bytes / (1024.0 * 1024.0), 2) + " MiB"; }

std::vector<std::string> table(const std::vector<std::string>& header,
                               const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> all{header};
  all.insert(all.end(), rows.begin(), rows.end());
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : all) {
    for (size_t i = 0; i < header.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  }
  std::vector<std::string> lines;
  for (const auto& row : all) {
    std::string line;
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string pad(widths[i] - row[i].size(), ' ');
      line += (i ? "  " : "") + (i == 0 ? row[i] + pad : pad + row[i]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    lines.push_back(line);
  }
  return lines;
}

} // namespace popsim::profile
