#include "compiler/ir_dump.h"

#include "common/check.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace popsim::compiler {

IrDump IrDump::fromEnvironment() {
  const char* root = std::getenv("POPSIM_DUMP_IR");
  if (root == nullptr || *root == '\0') {
    return IrDump();
  }
  static std::atomic<int> compilations{0};
  return IrDump(
      (std::filesystem::path(root) / ("compile-" + std::to_string(++compilations))).string());
}

void IrDump::write(const ir::Graph& graph, const CompileSettings& settings,
                   const std::string& step) {
  if (!enabled()) {
    return;
  }
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  POPSIM_CHECK_OPTION(!error, "POPSIM_DUMP_IR", "POPSIM_DUMP_IR: cannot create the directory '",
                      directory_, "' (", error.message(),
                      "). Point POPSIM_DUMP_IR at a writable directory, or unset it.");
  char number[16];
  std::snprintf(number, sizeof(number), "%02d", written_++);
  const std::filesystem::path file =
      std::filesystem::path(directory_) / (std::string(number) + "-" + step + ".ir");
  std::ofstream out(file);
  ir::PrintOptions print;
  print.fullPaths = true;
  print.full = true; // popsim-opt reads dumps back
  out << printProgramText(graph, settings, print);
  POPSIM_CHECK_OPTION(out.good(), "POPSIM_DUMP_IR", "POPSIM_DUMP_IR: cannot write '", file.string(),
                      "'. Point POPSIM_DUMP_IR at a writable directory, or unset it.");
}

} // namespace popsim::compiler
