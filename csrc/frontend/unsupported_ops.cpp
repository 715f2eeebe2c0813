#include "frontend/unsupported_ops.h"

#include <map>
#include <set>
#include <sstream>

namespace popsim::frontend {
namespace {

constexpr size_t kLinesShown = 5;

std::string lineOf(const UnsupportedOp& use) {
  const ir::SourceLocation& location = use.location;
  std::string text = location.str();
  if (!location.function.empty()) {
    text += " (in " + location.function + ")";
  } else if (!location.known() && !use.module.empty()) {
    text += " (in module " + use.module + ")";
  }
  return text;
}

// All uses of one op for one reason.
struct OpGroup {
  std::string op;
  std::string reason;
  size_t uses = 0;
  std::vector<std::string> lines; // distinct, in order of first use
};

} // namespace

std::string unsupportedOpsMessage(const std::vector<UnsupportedOp>& uses) {
  std::set<std::string> names;
  std::vector<OpGroup> groups;
  std::map<std::pair<std::string, std::string>, size_t> groupIndex;
  for (const UnsupportedOp& use : uses) {
    names.insert(use.op);
    const auto key = std::make_pair(use.op, use.reason);
    auto found = groupIndex.find(key);
    if (found == groupIndex.end()) {
      found = groupIndex.emplace(key, groups.size()).first;
      groups.push_back({use.op, use.reason, 0, {}});
    }
    OpGroup& group = groups[found->second];
    ++group.uses;
    const std::string line = lineOf(use);
    bool seen = false;
    for (const std::string& known : group.lines) {
      seen = seen || known == line;
    }
    if (!seen) group.lines.push_back(line);
  }

  std::ostringstream message;
  message << "Unsupported ops found in compiled model: [";
  bool first = true;
  for (const std::string& name : names) {
    message << (first ? "" : ", ") << name;
    first = false;
  }
  message << "]";
  for (const OpGroup& group : groups) {
    message << "\n  " << group.op;
    if (group.uses > 1) {
      message << ", " << group.uses << " uses";
    }
    if (group.lines.size() > 1) {
      message << " at " << group.lines.size() << " lines: ";
    } else {
      message << " at ";
    }
    for (size_t i = 0; i < group.lines.size() && i < kLinesShown; ++i) {
      message << (i == 0 ? "" : ", ") << group.lines[i];
    }
    if (group.lines.size() > kLinesShown) {
      message << " and " << group.lines.size() - kLinesShown << " more";
    }
    if (!group.reason.empty()) {
      message << ": " << group.reason;
    }
  }
  message << "\nRewrite these parts of the model with supported ops (the Supported ops page of "
             "popsim's documentation lists them), "
             "or run them on the host before calling the popsim model.";
  return message.str();
}

} // namespace popsim::frontend
