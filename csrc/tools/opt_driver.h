#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace popsim::tools {

// popsim-opt: reads an IR file (the settings header and full graph IR dumps
// write, compiler/program_text.h), runs compiler passes on it by name and
// prints the result, so that a pass can be run, bisected and pinned on its
// own. `arguments` are the command
// line without the program's name; the result goes to `out` and errors to
// `err`. Returns the exit status (0 success, 1 a failing pass or bad IR, 2 a
// bad command line). `usage()` is the --help text.
int runOpt(const std::vector<std::string>& arguments, std::ostream& out, std::ostream& err);
std::string usage();

// runOpt on the text of a file (`arguments` name none).
int runOptOnText(const std::vector<std::string>& arguments, std::string_view text,
                 std::ostream& out, std::ostream& err);

// A test file's cases, split at lines "// -----" (--split-input-file). Each
// case's text starts with blank lines in place of the file's lines before
// it, so that errors and directives name the file's lines.
struct InputCase {
  size_t firstLine;
  std::string text;
};
std::vector<InputCase> splitInputFile(std::string_view text);

} // namespace popsim::tools
