#include "compiler/ir_dump.h"

#include "common/check.h"
#include "common/safe_files.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
  // The root and this compilation's directory in it: whoever controls either
  // could plant names or replace the dumps.
  for (const std::filesystem::path& directory :
       {std::filesystem::path(directory_).parent_path(), std::filesystem::path(directory_)}) {
    const auto problem = sharedDirectoryProblem(directory.string());
    POPSIM_CHECK_OPTION(!problem.has_value(), "POPSIM_DUMP_IR",
                        "POPSIM_DUMP_IR: popsim does not write into '", directory.string(),
                        "', which ", problem.value_or(""),
                        ". Point POPSIM_DUMP_IR at a directory of your own, or unset it.");
  }
  char number[16];
  std::snprintf(number, sizeof(number), "%02d", written_++);
  const std::filesystem::path file =
      std::filesystem::path(directory_) / (std::string(number) + "-" + step + ".ir");
  ir::PrintOptions print;
  print.fullPaths = true;
  print.full = true; // popsim-opt reads dumps back
  try {
    // Dump names are predictable: written so that a name planted first is never followed.
    writeFileAtomically(file.string(), printProgramText(graph, settings, print));
  } catch (const std::filesystem::filesystem_error& failure) {
    throwOptionError("POPSIM_DUMP_IR",
                     strCat("POPSIM_DUMP_IR: cannot write '", file.string(), "' (",
                            failure.code().message(),
                            "). Point POPSIM_DUMP_IR at a writable directory, or unset it."));
  }
}

} // namespace popsim::compiler
