#pragma once

// Reading IR text a line at a time, token by token: the graph's parser
// (ir/parser.h) and the compile options header (compiler/program_text.h)
// read with it, so both name the line, column and what they expected.

#include "common/error.h"
#include "common/strings.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace popsim::ir {

// Whether a line of IR text holds nothing to read: empty, or a comment,
// whose first character (after spaces) is '#' or which starts with "//"
// (test files' RUN and CHECK lines and their "// -----" case separators).
inline bool blankIrLine(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line[first] == '#' || line.substr(first, 2) == "//";
}

// One line of the text, read left to right.
class LineReader {
public:
  LineReader(std::string_view line, size_t number)
      : line_(line), place_(strCat("IR text, line ", number)) {}
  // A line that is not in a file: errors start with `place` (an option, say).
  LineReader(std::string_view line, std::string place) : line_(line), place_(std::move(place)) {}

  // Fails naming the last token read (or the one at `column`, 0-based).
  [[noreturn]] void fail(const std::string& problem) const { failAt(start_, problem); }
  [[noreturn]] void failAt(size_t column, const std::string& problem) const {
    throwError(ErrorKind::InvalidInput, strCat(place_, ", column ", column + 1, ": ", problem,
                                               " (the line reads '", line_, "')."));
  }
  // Where the next token starts: errors about it name this column.
  size_t mark() {
    skipSpaces();
    start_ = pos_;
    return pos_;
  }

  void skipSpaces() {
    while (pos_ < line_.size() && line_[pos_] == ' ')
      ++pos_;
  }
  bool atEnd() {
    skipSpaces();
    return pos_ >= line_.size();
  }
  char peek() {
    skipSpaces();
    return pos_ < line_.size() ? line_[pos_] : '\0';
  }
  // Consumes `text` if the line continues with it.
  bool consume(std::string_view text) {
    mark();
    if (line_.substr(pos_, text.size()) != text) return false;
    pos_ += text.size();
    return true;
  }
  void expect(std::string_view text) {
    if (!consume(text)) fail(strCat("expected '", text, "'"));
  }
  // A run of characters none of which is in `stops` (nor a space).
  std::string word(const char* stops = ",()[]{}:=#") {
    const size_t start = mark();
    while (pos_ < line_.size() && line_[pos_] != ' ' && std::strchr(stops, line_[pos_]) == nullptr)
      ++pos_;
    if (pos_ == start) fail("expected a name or a number");
    return std::string(line_.substr(start, pos_ - start));
  }
  std::string quoted() {
    mark();
    expect("\"");
    const size_t end = line_.find('"', pos_);
    if (end == std::string_view::npos) fail("a quoted name has no closing quote");
    std::string text(line_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return text;
  }
  int64_t integer() {
    const std::string text = word();
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || errno != 0) fail(strCat("'", text, "' is not an integer"));
    return value;
  }
  double number() {
    const std::string text = word();
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (*end != '\0') fail(strCat("'", text, "' is not a number"));
    return value;
  }
  std::string rest() {
    skipSpaces();
    std::string text(line_.substr(pos_));
    pos_ = line_.size();
    return text;
  }

private:
  std::string_view line_;
  std::string place_;
  size_t pos_ = 0;
  size_t start_ = 0;
};

} // namespace popsim::ir
