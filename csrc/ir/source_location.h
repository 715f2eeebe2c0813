#pragma once

#include <cstdint>
#include <string>

namespace popsim::ir {

// Where in the user's program an op came from: the first stack frame outside
// PyTorch and popsim, so that errors point at the line the user wrote.
struct SourceLocation {
  std::string file;
  int64_t line = 0;
  std::string function;
  // The whole Python stack at trace time, innermost frame first (may be empty).
  std::string stack;
  // The popsim.NameScope names the op was traced in, outermost first, joined
  // by "/" (empty outside any).
  std::string nameScope;

  bool known() const { return !file.empty(); }
  // "model.py:12" or "<unknown location>".
  std::string str() const;
  // "model.py:12" with the directory stripped (used in golden IR text).
  std::string shortStr() const;
};

} // namespace popsim::ir
