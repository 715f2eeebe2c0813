#pragma once

#include "compiler/program_text.h"
#include "ir/graph.h"

#include <string>

namespace popsim::compiler {

// Writes the graph as text (with source lines) before the first pass and
// after each one, as <directory>/<NN>-<pass>.ir numbered in order, so a
// transformation can be read step by step. Each file starts with the
// compilation's settings (program_text.h), so popsim-opt reproduces the
// next step, or the whole compilation from the first file, without flags.
// An empty directory writes nothing.
class IrDump {
public:
  explicit IrDump(std::string directory = {}) : directory_(std::move(directory)) {}
  // The directory POPSIM_DUMP_IR names, one subdirectory per compilation in
  // this process (compile-1, compile-2, ...); none when it is unset or empty.
  static IrDump fromEnvironment();

  bool enabled() const { return !directory_.empty(); }
  int written() const { return written_; }
  // Errors name the file when it cannot be written.
  void write(const ir::Graph& graph, const CompileSettings& settings, const std::string& step);

private:
  std::string directory_;
  int written_ = 0;
};

} // namespace popsim::compiler
