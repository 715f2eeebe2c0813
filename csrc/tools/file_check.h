#pragma once

// A small FileCheck (LLVM's, as MLIR's and torch-mlir's tests use it) for
// popsim's IR tests: the directives of a test case, written as comments
// beside its input, are matched in order against the text a tool printed.
//
//   // CHECK: pattern        on a later line than the previous match (or later
//                            on the same line)
//   // CHECK-NEXT: pattern   on the line after the previous match's
//   // CHECK-SAME: pattern   on the previous match's line, after it
//   // CHECK-NOT: pattern    nowhere between the previous match and the next
//                            one (or the end of the text)
//
// A pattern is literal text, where a run of spaces matches any run of
// spaces, except for {{regex}} (an ECMAScript regular expression),
// [[NAME:regex]] (matches the regex and names what it matched) and [[NAME]]
// (what NAME matched earlier, literally): value numbers change when a pass
// changes, so tests name them instead of spelling them.

#include <string>
#include <string_view>

namespace popsim::tools {

// Checks `output` against the directives in `checks` (lines of the test
// case; the others are ignored). `file` and `firstLine` name where the case
// starts, so failures point at the directive's line. Returns "" when every
// directive holds, otherwise what failed: the directive, its line and the
// output near where it was looked for. A case without directives fails
// (a test that checks nothing cannot fail).
std::string fileCheck(std::string_view checks, std::string_view output, const std::string& file,
                      size_t firstLine = 1);

} // namespace popsim::tools
