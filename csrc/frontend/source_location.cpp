#include "frontend/source_location.h"

#include "common/strings.h"

#include <torch/csrc/jit/ir/ir.h>

#include <sstream>

namespace popsim::frontend {
namespace {

struct Frame {
  std::string file;
  int64_t line = 0;
  std::string function;
};

// "path/to/file.py(12): forward"
bool parseFrame(const std::string& text, Frame* frame) {
  const size_t close = text.rfind("): ");
  const size_t open = close == std::string::npos ? std::string::npos : text.rfind('(', close);
  if (open == std::string::npos || open == 0) {
    return false;
  }
  try {
    frame->line = std::stoll(text.substr(open + 1, close - open - 1));
  } catch (const std::exception&) {
    return false;
  }
  frame->file = text.substr(0, open);
  frame->function = text.substr(close + 3);
  return true;
}

// A frame to skip: its file contains one of the excluded strings (torch's
// and popsim's directories by default, Options.sourceLocationExcludes).
bool isLibraryFile(const std::string& file, const std::vector<std::string>& libraryPaths) {
  for (const std::string& excluded : libraryPaths) {
    if (!excluded.empty() && file.find(excluded) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

ir::SourceLocation parseTracedStack(const std::string& stack,
                                    const std::vector<std::string>& libraryPaths) {
  std::istringstream lines(stack);
  std::string line;
  std::vector<Frame> frames;
  while (std::getline(lines, line)) {
    Frame frame;
    if (parseFrame(line, &frame)) {
      frames.push_back(frame);
    }
  }
  ir::SourceLocation location;
  location.stack = stack;
  for (const Frame& frame : frames) {
    if (!isLibraryFile(frame.file, libraryPaths)) {
      location.file = frame.file;
      location.line = frame.line;
      location.function = frame.function;
      return location;
    }
  }
  if (!frames.empty()) {
    location.file = frames.front().file;
    location.line = frames.front().line;
    location.function = frames.front().function;
  }
  return location;
}

ir::SourceLocation userSourceLocation(const torch::jit::Node& node,
                                      const std::vector<std::string>& libraryPaths) {
  const torch::jit::SourceRange& range = node.sourceRange();
  if (!range.source()) {
    return {};
  }
  ir::SourceLocation location = parseTracedStack(range.text().str(), libraryPaths);
  if (!location.known()) {
    // Scripted (not traced) code: the range points into TorchScript source.
    // A module torch.jit.save wrote keeps, beside its serialized code, the
    // range of the user's file each line was generated from: prefer that.
    const c10::optional<torch::jit::SourceRange> original = range.findSourceRangeThatGenerated();
    const torch::jit::SourceRange& written = original.has_value() ? *original : range;
    if (auto fileLine = written.file_line_col()) {
      location.file = std::get<0>(*fileLine);
      location.line = static_cast<int64_t>(std::get<1>(*fileLine));
    }
  }
  return location;
}

} // namespace popsim::frontend
