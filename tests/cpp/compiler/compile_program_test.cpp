// The compile pipeline as a whole, on a two-stage regression model trained
// with SGD and recomputation: which passes it runs for which options, in
// which order, dumped by name (POPSIM_DUMP_IR) and switched off by name
// (POPSIM_DISABLE_PASSES). What each pass does is pinned by the golden IR
// files of tests/ir (golden_ir_test.cpp).

#include "common/error.h"
#include "compiler/compile_program.h"
#include "compiler/passes.h"
#include "compiler/program_text.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace popsim {
namespace {

using ir::OpKind;
using ir::Value;
using testing::f32;
using testing::inBlock;

// loss = mean(linear(relu(linear(x, a.weight)), b.weight)), the first linear
// and relu in block "A", the rest in block "B".
std::unique_ptr<ir::Graph> twoBlockRegression() {
  auto graph = std::make_unique<ir::Graph>();
  Value* x = graph->addInput("x", f32({2, 3}));
  Value* a = graph->addWeight("a.weight", f32({4, 3}), true);
  Value* b = graph->addWeight("b.weight", f32({1, 4}), true);
  Value* hidden =
      inBlock(graph->apply(OpKind::Linear, {x, a}, {}, {"model.py", 5, "forward", "", ""}), "A");
  hidden =
      inBlock(graph->apply(OpKind::Relu, {hidden}, {}, {"model.py", 6, "forward", "", ""}), "A");
  Value* y = inBlock(
      graph->apply(OpKind::Linear, {hidden, b}, {}, {"model.py", 7, "forward", "", ""}), "B");
  Value* loss = inBlock(graph->apply(OpKind::ReduceMean, {y},
                                     {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}},
                                     {"model.py", 8, "forward", "", ""}),
                        "B");
  graph->addOutput(loss);
  graph->setLoss(loss);
  return graph;
}

device::IpuSystemConfig twoIpus() {
  device::IpuSystemConfig system;
  system.numIpus = 2;
  return system;
}

compiler::CompilerOptions trainingOnTwoIpus() {
  compiler::CompilerOptions options;
  options.program = compiler::ProgramKind::Training;
  options.training.groups.push_back({{"a.weight", "b.weight"}});
  options.gradientAccumulation = 3;
  options.stages = {{"A", 0, 0}, {"B", 1, 1}};
  options.recomputation = true;
  return options;
}

ir::PrintOptions fullForm() {
  ir::PrintOptions options;
  options.fullPaths = true;
  options.full = true;
  return options;
}

// Compiles with POPSIM_DUMP_IR set to a fresh directory; returns each dumped
// file's text by name ("00-import.ir", ...).
std::map<std::string, std::string> compileAndDump(const ir::Graph& graph,
                                                  const compiler::CompilerOptions& options) {
  // One directory per process and test: CTest runs tests in parallel processes,
  // which all share gtest's random seed.
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() /
      ("popsim-dump-test-" + std::to_string(::getpid()) + "-" + test->name());
  std::filesystem::remove_all(root);
  setenv("POPSIM_DUMP_IR", root.c_str(), 1);
  compiler::compileProgram(graph, options, twoIpus());
  unsetenv("POPSIM_DUMP_IR");
  std::map<std::string, std::string> files;
  for (const auto& directory : std::filesystem::directory_iterator(root)) {
    for (const auto& file : std::filesystem::directory_iterator(directory.path())) {
      std::ifstream in(file.path());
      std::stringstream text;
      text << in.rdbuf();
      files[file.path().filename().string()] = text.str();
    }
  }
  std::filesystem::remove_all(root);
  return files;
}

std::vector<std::string> namesOf(const std::map<std::string, std::string>& files) {
  std::vector<std::string> names;
  for (const auto& [name, text] : files)
    names.push_back(name);
  return names;
}

TEST(CompileGraphTest, InferenceRunsTheInferencePasses) {
  compiler::CompilerOptions options = trainingOnTwoIpus();
  options.program = compiler::ProgramKind::Inference;
  options.recomputation = false;
  options.deviceIterations = 2;
  EXPECT_EQ(
      namesOf(compileAndDump(*twoBlockRegression(), options)),
      (std::vector<std::string>{"00-import.ir", "01-stage-assignment.ir", "02-random-counters.ir",
                                "03-simplify-layout.ir", "04-dead-code-elimination.ir",
                                "05-task-order.ir", "06-ipu-copies.ir"}));
}

// Every pass is dumped in order, each under its own name (what each leaves
// is pinned by the golden files of tests/ir). simplify-layout and
// dead-code-elimination find nothing to do here and leave it unchanged.
TEST(CompileGraphTest, EveryTrainingPassIsDumpedInOrder) {
  const auto files = compileAndDump(*twoBlockRegression(), trainingOnTwoIpus());
  EXPECT_EQ(namesOf(files),
            (std::vector<std::string>{"00-import.ir", "01-stage-assignment.ir", "02-autodiff.ir",
                                      "03-gradient-accumulation.ir", "04-random-counters.ir",
                                      "05-optimizer-step.ir", "06-simplify-layout.ir",
                                      "07-dead-code-elimination.ir", "08-task-order.ir",
                                      "09-ipu-copies.ir", "10-recomputation.ir"}));
  EXPECT_EQ(files.at("06-simplify-layout.ir"), files.at("05-optimizer-step.ir"));
  EXPECT_EQ(files.at("07-dead-code-elimination.ir"), files.at("05-optimizer-step.ir"));
  // A dump reads back as the settings and graph it shows (popsim-opt runs
  // passes on dumps).
  for (const auto& [name, text] : files) {
    EXPECT_EQ(text.rfind("options {\n  program = training\n", 0), 0u) << name;
    const compiler::ProgramText program = compiler::parseProgramText(text);
    EXPECT_EQ(compiler::printProgramText(*program.graph, program.settings, fullForm()), text)
        << name;
  }
}

TEST(CompileGraphTest, TheDisabledOptionalPassesAreSkipped) {
  setenv("POPSIM_DISABLE_PASSES", "recomputation, simplify-layout", 1);
  const auto files = compileAndDump(*twoBlockRegression(), trainingOnTwoIpus());
  unsetenv("POPSIM_DISABLE_PASSES");
  EXPECT_EQ(files.count("10-recomputation.ir"), 0u);
  EXPECT_EQ(namesOf(files).back(), "08-ipu-copies.ir");
}

TEST(CompileGraphTest, DisablingARequiredOrUnknownPassIsRefusedNamingIt) {
  for (const auto& [list, problem] : std::vector<std::pair<const char*, const char*>>{
           {"ipu-copies", "POPSIM_DISABLE_PASSES names 'ipu-copies', which the program cannot "
                          "run without. Passes that can be switched off: simplify-layout, "
                          "dead-code-elimination, recomputation."},
           {"ipu-copy", "POPSIM_DISABLE_PASSES names 'ipu-copy', which is not a pass. Passes "
                        "that can be switched off: simplify-layout, dead-code-elimination, "
                        "recomputation."}}) {
    setenv("POPSIM_DISABLE_PASSES", list, 1);
    const CoreError error = testing::captureError(
        [] { compiler::compileProgram(*twoBlockRegression(), trainingOnTwoIpus(), twoIpus()); });
    unsetenv("POPSIM_DISABLE_PASSES");
    EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
    EXPECT_EQ(std::string(error.what()), problem);
  }
}

TEST(CompileGraphTest, ThePipelineIsNestedAndOnlyHoldsWhatTheOptionsNeed) {
  EXPECT_EQ(compiler::compilePipeline(trainingOnTwoIpus())->describe(),
            R"(check-host-overlap (check)
stage-assignment
training-program:
  check-loss (check)
  autodiff
  gradient-accumulation
  random-counters
  optimizer-step
simplify-layout (optional)
dead-code-elimination (optional)
check-program (check)
check-tasks (check)
tasks:
  task-order
  ipu-copies
  recomputation (optional)
)");
}

TEST(CompileGraphTest, AnUnwritableDumpDirectoryIsNamed) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "popsim-dump-file";
  std::ofstream(file) << "a file, not a directory";
  setenv("POPSIM_DUMP_IR", file.c_str(), 1);
  const CoreError error = testing::captureError(
      [] { compiler::compileProgram(*twoBlockRegression(), trainingOnTwoIpus(), twoIpus()); });
  unsetenv("POPSIM_DUMP_IR");
  std::filesystem::remove(file);
  EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
  EXPECT_TRUE(testing::contains(error.what(), "POPSIM_DUMP_IR: cannot create the directory '" +
                                                  file.string() + "/compile-"));
}

} // namespace
} // namespace popsim
