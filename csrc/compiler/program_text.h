#pragma once

// A compilation's settings as the header of its IR text, so that a dump
// holds everything the passes read and popsim-opt reproduces it without
// flags (as MLIR's module attributes and XLA's module config travel with
// their programs):
//
//   options {
//     program = training
//     optimizer = sgd
//     group = {parameters=["fc.weight", "fc.bias"], momentum=true}
//     gradient_accumulation = 4
//     stage = {block="A", stage=0, ipu=0}
//     ipus = 2
//   }
//   graph(%x: f32[4,8]) {
//     ...
//
// Only settings that differ from their defaults are written (a default
// inference compilation has no header), one per line, in a fixed order;
// repeated records (group, stage, replica_group) keep their order.

#include "compiler/compiler_options.h"
#include "device/ipu_system.h"
#include "ir/graph.h"
#include "ir/printer.h"

#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace popsim::compiler {

class PassContext;

// What the passes read besides the graph.
struct CompileSettings {
  CompilerOptions options;
  device::IpuSystemConfig system;
  // Optional passes switched off (POPSIM_DISABLE_PASSES).
  std::set<std::string> disabledPasses;
};

CompileSettings settingsOf(const PassContext& context);

// The "options { ... }" header, ending in a newline; "" when every setting
// is its default.
std::string printSettingsHeader(const CompileSettings& settings);

// The header, then the graph as ir::printGraph prints it.
std::string printProgramText(const ir::Graph& graph, const CompileSettings& settings,
                             const ir::PrintOptions& print);

// Sets one setting as a header line writes it ("replicas = 2"); a record
// (group, stage, replica_group) is added. Errors start with `place`.
void applySetting(CompileSettings& settings, std::string_view setting, const std::string& place);

struct ProgramText {
  CompileSettings settings;
  std::unique_ptr<ir::Graph> graph;
};

// Reads what printProgramText writes (a text without a header has the
// default settings). Errors are InvalidInput errors naming the line, the
// column and what was expected, as the graph's own are.
ProgramText parseProgramText(std::string_view text);

} // namespace popsim::compiler
