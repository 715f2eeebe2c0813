#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace popsim::tools {

// popsim-opt: reads an IR file (the full form IR dumps and printGraph write),
// runs compiler passes on it by name and prints the result, so that a pass
// can be run, bisected and pinned on its own. `arguments` are the command
// line without the program's name; the result goes to `out` and errors to
// `err`. Returns the exit status (0 success, 1 a failing pass or bad IR, 2 a
// bad command line). `usage()` is the --help text.
int runOpt(const std::vector<std::string>& arguments, std::ostream& out, std::ostream& err);
std::string usage();

} // namespace popsim::tools
