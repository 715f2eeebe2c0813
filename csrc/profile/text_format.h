#pragma once

#include <string>
#include <vector>

// Numbers as the profile's text writes them. Each helper matches a Python
// format spec, so that reports read alike wherever they are printed.
namespace popsim::profile {

// "{:,}" of an integer: 1,234,567.
std::string grouped(long long value);
// "{:,.Nf}": fixed with `decimals` digits and thousands separators.
std::string groupedFixed(double value, int decimals);
// "{:.Nf}".
std::string fixed(double value, int decimals);
// "{:.N%}": a fraction as a percentage.
std::string percent(double fraction, int decimals);
// "{:.Ng}" (and "{:g}" with 6).
std::string general(double value, int precision);
// Bytes in MiB: "12.34 MiB", with thousands separators.
std::string mib(double bytes);
// A text table: the first column left-aligned, the others right-aligned, two
// spaces between columns, trailing spaces removed.
std::vector<std::string> table(const std::vector<std::string>& header,
                               const std::vector<std::vector<std::string>>& rows);

} // namespace popsim::profile
