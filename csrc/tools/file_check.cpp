// fileCheck: directives are read from the case, then matched one after the
// other against the output's lines, each from where the previous one
// matched; CHECK-NOT patterns wait for the next positive match (or the end)
// to know the stretch of output they must not appear in.

#include "tools/file_check.h"

#include "common/strings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <vector>

namespace popsim::tools {
namespace {

enum class Kind { Check, Next, Same, Not };

struct Directive {
  Kind kind;
  std::string name; // as written: CHECK, CHECK-NEXT, ...
  std::string pattern;
  size_t line;
};

// The lines of `text`; a final '\n' ends the last line rather than starting one.
std::vector<std::string_view> linesOf(std::string_view text) {
  if (text.empty()) return {};
  std::vector<std::string_view> lines = splitLines(text);
  if (text.back() == '\n') lines.pop_back();
  return lines;
}

std::string_view trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// A failure: the directive's place in the test file, then what went wrong.
struct Failure {
  std::string message;
};

std::vector<Directive> directivesOf(std::string_view checks, const std::string& file,
                                    size_t firstLine) {
  static const std::vector<std::pair<std::string, Kind>> kinds = {{"CHECK", Kind::Check},
                                                                  {"CHECK-NEXT", Kind::Next},
                                                                  {"CHECK-SAME", Kind::Same},
                                                                  {"CHECK-NOT", Kind::Not}};
  std::vector<Directive> directives;
  const std::vector<std::string_view> lines = linesOf(checks);
  for (size_t index = 0; index < lines.size(); ++index) {
    std::string_view line = trimmed(lines[index]);
    if (line.substr(0, 2) != "//") continue;
    line = trimmed(line.substr(2));
    if (line.substr(0, 5) != "CHECK") continue;
    const size_t colon = line.find(':');
    const std::string name(line.substr(0, colon));
    const size_t where = firstLine + index;
    const auto kind = std::find_if(kinds.begin(), kinds.end(),
                                   [&](const auto& each) { return each.first == name; });
    if (colon == std::string_view::npos || kind == kinds.end()) {
      throw Failure{strCat(file, ":", where, ": '", name,
                           "' is not a directive (CHECK, CHECK-NEXT, CHECK-SAME, CHECK-NOT, "
                           "each followed by ':')")};
    }
    const std::string pattern(trimmed(line.substr(colon + 1)));
    if (pattern.empty()) throw Failure{strCat(file, ":", where, ": ", name, " has no pattern")};
    directives.push_back({kind->second, name, pattern, where});
  }
  return directives;
}

std::string escaped(std::string_view literal) {
  std::string out;
  for (const char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Capturing groups a user's regex opens: '(' not escaped, not "(?".
size_t groupsIn(std::string_view regex) {
  size_t groups = 0;
  for (size_t at = 0; at < regex.size(); ++at) {
    if (regex[at] == '\\') {
      ++at;
    } else if (regex[at] == '(' && (at + 1 >= regex.size() || regex[at + 1] != '?')) {
      ++groups;
    }
  }
  return groups;
}

// A directive's pattern as a regex, with the variables defined so far put in
// and the group of each variable it defines.
struct CompiledPattern {
  std::regex regex;
  std::vector<std::pair<std::string, size_t>> definitions; // name, group
};

CompiledPattern compile(const Directive& directive, const std::map<std::string, std::string>& vars,
                        const std::string& file) {
  const std::string& pattern = directive.pattern;
  const auto fail = [&](const std::string& problem) {
    throw Failure{strCat(file, ":", directive.line, ": ", directive.name, ": ", problem)};
  };
  CompiledPattern compiled;
  std::string regex;
  size_t groups = 0;
  for (size_t at = 0; at < pattern.size();) {
    if (pattern.compare(at, 2, "{{") == 0) {
      const size_t end = pattern.find("}}", at + 2);
      if (end == std::string::npos) fail("'{{' has no closing '}}'");
      const std::string inner = pattern.substr(at + 2, end - at - 2);
      regex += "(?:" + inner + ")";
      groups += groupsIn(inner);
      at = end + 2;
    } else if (pattern.compare(at, 2, "[[") == 0) {
      const size_t end = pattern.find("]]", at + 2);
      if (end == std::string::npos) fail("'[[' has no closing ']]'");
      const std::string inner = pattern.substr(at + 2, end - at - 2);
      const size_t colon = inner.find(':');
      if (colon != std::string::npos) {
        const std::string body = inner.substr(colon + 1);
        regex += "(" + body + ")";
        compiled.definitions.emplace_back(inner.substr(0, colon), ++groups);
        groups += groupsIn(body);
      } else {
        const auto value = vars.find(inner);
        if (value == vars.end()) fail(strCat("[[", inner, "]] is used before a match defines it"));
        regex += escaped(value->second);
      }
      at = end + 2;
    } else if (pattern[at] == ' ' || pattern[at] == '\t') {
      while (at < pattern.size() && (pattern[at] == ' ' || pattern[at] == '\t'))
        ++at;
      regex += "[ \\t]+";
    } else {
      regex += escaped(std::string_view(pattern).substr(at, 1));
      ++at;
    }
  }
  try {
    compiled.regex = std::regex(regex);
  } catch (const std::regex_error& error) {
    fail(strCat("the pattern is not a valid regex (", error.what(), ")"));
  }
  return compiled;
}

// Where the previous match ended.
struct Position {
  size_t line = 0;
  size_t column = 0;
};

class Matcher {
public:
  Matcher(std::string_view output, std::string file)
      : lines_(linesOf(output)), file_(std::move(file)) {}

  void run(const std::vector<Directive>& directives) {
    for (const Directive& directive : directives) {
      if (directive.kind == Kind::Not) {
        pendingNots_.push_back(&directive);
        continue;
      }
      const std::optional<Position> start = find(directive);
      checkNots(start ? *start : Position{lines_.size(), 0});
    }
    checkNots(Position{lines_.size(), 0});
  }

private:
  // Matches a positive directive and returns where its match starts.
  std::optional<Position> find(const Directive& directive) {
    const CompiledPattern compiled = compile(directive, vars_, file_);
    if ((directive.kind == Kind::Next || directive.kind == Kind::Same) && !matched_) {
      fail(directive, "needs a CHECK before it");
    }
    size_t first = position_.line;
    size_t last = lines_.size();
    if (directive.kind == Kind::Next) {
      first = position_.line + 1;
      last = std::min(first + 1, lines_.size());
    } else if (directive.kind == Kind::Same) {
      last = std::min(first + 1, lines_.size());
    }
    for (size_t line = first; line < last; ++line) {
      const size_t from = line == position_.line ? position_.column : 0;
      const std::string text(lines_[line].substr(std::min(from, lines_[line].size())));
      std::smatch match;
      if (!std::regex_search(text, match, compiled.regex)) continue;
      for (const auto& [name, group] : compiled.definitions)
        vars_[name] = match[group].str();
      const Position start{line, from + static_cast<size_t>(match.position(0))};
      position_ = {line, start.column + static_cast<size_t>(match.length(0))};
      matched_ = true;
      return start;
    }
    const std::string where =
        directive.kind == Kind::Next ? strCat("on output line ", first + 1)
        : directive.kind == Kind::Same
            ? strCat("on output line ", first + 1, " after column ", position_.column + 1)
            : strCat("from output line ", first + 1, " on");
    fail(directive, "expected '" + directive.pattern + "' " + where);
  }

  // The pending CHECK-NOTs must not match between the previous match and
  // `end` (the next match's start).
  void checkNots(Position end) {
    for (const Directive* directive : pendingNots_) {
      const CompiledPattern compiled = compile(*directive, vars_, file_);
      for (size_t line = notsFrom_.line; line <= end.line && line < lines_.size(); ++line) {
        const size_t from = line == notsFrom_.line ? notsFrom_.column : 0;
        const size_t to = line == end.line ? end.column : lines_[line].size();
        if (from >= to) continue;
        const std::string text(lines_[line].substr(from, to - from));
        if (std::regex_search(text, compiled.regex)) {
          fail(*directive, strCat("'", directive->pattern, "' found on output line ", line + 1),
               line);
        }
      }
    }
    pendingNots_.clear();
    notsFrom_ = position_;
  }

  [[noreturn]] void fail(const Directive& directive, const std::string& problem,
                         std::optional<size_t> at = std::nullopt) {
    std::ostringstream out;
    out << file_ << ":" << directive.line << ": " << directive.name << ": " << problem
        << "\nthe output:\n";
    const size_t mark = at.value_or(position_.line);
    for (size_t line = 0; line < lines_.size(); ++line) {
      out << (line == mark ? ">" : " ")
          << std::string(line + 1 < 10    ? 2
                         : line + 1 < 100 ? 1
                                          : 0,
                         ' ')
          << line + 1 << " | " << lines_[line] << "\n";
    }
    throw Failure{out.str()};
  }

  std::vector<std::string_view> lines_;
  std::string file_;
  std::map<std::string, std::string> vars_;
  Position position_;
  Position notsFrom_;
  bool matched_ = false;
  std::vector<const Directive*> pendingNots_;
};

} // namespace

std::string fileCheck(std::string_view checks, std::string_view output, const std::string& file,
                      size_t firstLine) {
  try {
    const std::vector<Directive> directives = directivesOf(checks, file, firstLine);
    if (directives.empty()) {
      return strCat(file, ":", firstLine,
                    ": the case has no CHECK directive, so it cannot fail; say what the output "
                    "must hold (// CHECK: ...)");
    }
    Matcher(output, file).run(directives);
    return "";
  } catch (const Failure& failure) {
    return failure.message;
  }
}

} // namespace popsim::tools
