// The compile sequence, pass by pass: every pass's output is pinned as IR
// text (read back from POPSIM_DUMP_IR), on a two-stage regression model
// trained with SGD and recomputation, so that a change to any pass shows up
// as a diff of the program it leaves behind.

#include "common/error.h"
#include "compiler/compile_program.h"
#include "ir/graph.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace popsim {
namespace {

using ir::OpKind;
using ir::Value;
using testing::f32;

// loss = mean(linear(relu(linear(x, a.weight)), b.weight)), the first linear
// and relu in block "A", the rest in block "B".
std::unique_ptr<ir::Graph> twoBlockRegression() {
  auto graph = std::make_unique<ir::Graph>();
  Value* x = graph->addInput("x", f32({2, 3}));
  Value* a = graph->addWeight("a.weight", f32({4, 3}), true);
  Value* b = graph->addWeight("b.weight", f32({1, 4}), true);
  const auto inBlock = [](Value* value, const char* block) {
    ir::Placement placement;
    placement.block = block;
    value->producer()->setPlacement(placement);
    return value;
  };
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

// Compiles with POPSIM_DUMP_IR set to a fresh directory; returns each dumped
// file's text by name ("00-import.ir", ...).
std::map<std::string, std::string> compileAndDump(const ir::Graph& graph,
                                                  const compiler::CompilerOptions& options) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() /
      ("popsim-dump-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
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

// The op lines of a dumped graph, without its header of weights, state and
// constants (which the passes after the training program leave alone).
std::string opLines(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::string ops;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) == 0 && line.rfind("    ", 0) != 0 && line != "  weights:" &&
        line != "  state:" && line != "  constants:") {
      ops += line + "\n";
    }
  }
  return ops;
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

// Each pass's output, pinned. simplify-layout and dead-code-elimination find
// nothing to do here (their own tests pin what they change).
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
  EXPECT_EQ(files.at("01-stage-assignment.ir"), R"(graph(%x: f32[2,3]) {
  weights:
    @a.weight: f32[4,3]
    @b.weight: f32[1,4]
  %0: f32[2,4] = linear(%x, @a.weight) [stage 0, ipu 0, block "A"]  # model.py:5
  %1: f32[2,4] = relu(%0) [stage 0, ipu 0, block "A"]  # model.py:6
  %2: f32[2,1] = linear(%1, @b.weight) [stage 1, ipu 1, block "B"]  # model.py:7
  %3: f32[] = reduce_mean(%2) {dims=[0,1], keepdim=false} [stage 1, ipu 1, block "B"]  # model.py:8
  loss %3
  return (%3)
}
)");
  EXPECT_EQ(files.at("05-optimizer-step.ir"), R"(graph(%x: f32[2,3]) {
  weights:
    @a.weight: f32[4,3]
    @b.weight: f32[1,4]
  state:
    &a.weight/accumulator: f32[4,3] (accumulator)
    &b.weight/accumulator: f32[1,4] (accumulator)
    &optimizer/group0/hyper: f64[5] (optimizer)
    &optimizer/group0/hyper@ipu1: f64[5] (optimizer)
  constants:
    $c0: f32[] = 1
  %0: f32[2,4] = linear(%x, @a.weight) [stage 0, ipu 0, block "A"]  # model.py:5
  %1: f32[2,4] = relu(%0) [stage 0, ipu 0, block "A"]  # model.py:6
  %2: f32[2,1] = linear(%1, @b.weight) [stage 1, ipu 1, block "B"]  # model.py:7
  %3: f32[] = reduce_mean(%2) {dims=[0,1], keepdim=false} [stage 1, ipu 1, block "B"]  # model.py:8
  %4: f32[1,1] = reshape($c0) {shape=[1,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %5: f32[2,1] = broadcast(%4) {shape=[2,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %6: f32[2,1] = affine(%5) {scale=0.5, shift=0} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %7: f32[2,4] = matmul(%6, @b.weight) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  %8: f32[1,4] = linear_grad_weight(%6, %1) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  %9: f32[2,4] = activation_grad(%7, %1) {activation="relu"} [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %10: f32[4,3] = linear_grad_weight(%9, %x) [backward, stage 0, ipu 0, block "A"]  # model.py:5
  accumulate(&a.weight/accumulator, %10) {every=3} [backward, stage 0, ipu 0, block "A"]
  accumulate(&b.weight/accumulator, %8) {every=3} [backward, stage 1, ipu 1, block "B"]
  sgd_update(@a.weight, &a.weight/accumulator, &optimizer/group0/hyper) {maximize=false, nesterov=false} [update, stage 0, ipu 0, block "A"]
  fill(&a.weight/accumulator) {value=0} [update, stage 0, ipu 0, block "A"]
  sgd_update(@b.weight, &b.weight/accumulator, &optimizer/group0/hyper@ipu1) {maximize=false, nesterov=false} [update, stage 1, ipu 1, block "B"]
  fill(&b.weight/accumulator) {value=0} [update, stage 1, ipu 1, block "B"]
  loss %3
  return (%3)
}
)");
  EXPECT_EQ(opLines(files.at("08-task-order.ir")),
            R"(  %0: f32[2,4] = linear(%x, @a.weight) [stage 0, ipu 0, block "A"]  # model.py:5
  %1: f32[2,4] = relu(%0) [stage 0, ipu 0, block "A"]  # model.py:6
  %2: f32[2,1] = linear(%1, @b.weight) [stage 1, ipu 1, block "B"]  # model.py:7
  %3: f32[] = reduce_mean(%2) {dims=[0,1], keepdim=false} [stage 1, ipu 1, block "B"]  # model.py:8
  %4: f32[1,1] = reshape($c0) {shape=[1,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %5: f32[2,1] = broadcast(%4) {shape=[2,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %6: f32[2,1] = affine(%5) {scale=0.5, shift=0} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %7: f32[2,4] = matmul(%6, @b.weight) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  %8: f32[1,4] = linear_grad_weight(%6, %1) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  accumulate(&b.weight/accumulator, %8) {every=3} [backward, stage 1, ipu 1, block "B"]
  %9: f32[2,4] = activation_grad(%7, %1) {activation="relu"} [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %10: f32[4,3] = linear_grad_weight(%9, %x) [backward, stage 0, ipu 0, block "A"]  # model.py:5
  accumulate(&a.weight/accumulator, %10) {every=3} [backward, stage 0, ipu 0, block "A"]
  sgd_update(@a.weight, &a.weight/accumulator, &optimizer/group0/hyper) {maximize=false, nesterov=false} [update, stage 0, ipu 0, block "A"]
  fill(&a.weight/accumulator) {value=0} [update, stage 0, ipu 0, block "A"]
  sgd_update(@b.weight, &b.weight/accumulator, &optimizer/group0/hyper@ipu1) {maximize=false, nesterov=false} [update, stage 1, ipu 1, block "B"]
  fill(&b.weight/accumulator) {value=0} [update, stage 1, ipu 1, block "B"]
  loss %3
  return (%3)
)");
  EXPECT_EQ(opLines(files.at("09-ipu-copies.ir")),
            R"(  %0: f32[2,4] = linear(%x, @a.weight) [stage 0, ipu 0, block "A"]  # model.py:5
  %1: f32[2,4] = relu(%0) [stage 0, ipu 0, block "A"]  # model.py:6
  %2: f32[2,4] = ipu_copy(%1) [stage 1, ipu 1, block "B"]  # model.py:7
  %3: f32[2,1] = linear(%2, @b.weight) [stage 1, ipu 1, block "B"]  # model.py:7
  %4: f32[] = reduce_mean(%3) {dims=[0,1], keepdim=false} [stage 1, ipu 1, block "B"]  # model.py:8
  %5: f32[1,1] = reshape($c0) {shape=[1,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %6: f32[2,1] = broadcast(%5) {shape=[2,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %7: f32[2,1] = affine(%6) {scale=0.5, shift=0} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %8: f32[2,4] = matmul(%7, @b.weight) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  %9: f32[1,4] = linear_grad_weight(%7, %2) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  accumulate(&b.weight/accumulator, %9) {every=3} [backward, stage 1, ipu 1, block "B"]
  %10: f32[2,4] = ipu_copy(%8) [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %11: f32[2,4] = activation_grad(%10, %1) {activation="relu"} [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %12: f32[4,3] = linear_grad_weight(%11, %x) [backward, stage 0, ipu 0, block "A"]  # model.py:5
  accumulate(&a.weight/accumulator, %12) {every=3} [backward, stage 0, ipu 0, block "A"]
  sgd_update(@a.weight, &a.weight/accumulator, &optimizer/group0/hyper) {maximize=false, nesterov=false} [update, stage 0, ipu 0, block "A"]
  fill(&a.weight/accumulator) {value=0} [update, stage 0, ipu 0, block "A"]
  sgd_update(@b.weight, &b.weight/accumulator, &optimizer/group0/hyper@ipu1) {maximize=false, nesterov=false} [update, stage 1, ipu 1, block "B"]
  fill(&b.weight/accumulator) {value=0} [update, stage 1, ipu 1, block "B"]
  loss %4
  return (%4)
)");
  EXPECT_EQ(opLines(files.at("10-recomputation.ir")),
            R"(  %0: f32[2,4] = linear(%x, @a.weight) [stage 0, ipu 0, block "A"]  # model.py:5
  %1: f32[2,4] = relu(%0) [stage 0, ipu 0, block "A"]  # model.py:6
  %2: f32[2,4] = ipu_copy(%1) [stage 1, ipu 1, block "B"]  # model.py:7
  %3: f32[2,1] = linear(%2, @b.weight) [stage 1, ipu 1, block "B"]  # model.py:7
  %4: f32[] = reduce_mean(%3) {dims=[0,1], keepdim=false} [stage 1, ipu 1, block "B"]  # model.py:8
  %5: f32[1,1] = reshape($c0) {shape=[1,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %6: f32[2,1] = broadcast(%5) {shape=[2,1]} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %7: f32[2,1] = affine(%6) {scale=0.5, shift=0} [backward, stage 1, ipu 1, block "B"]  # model.py:8
  %8: f32[2,4] = matmul(%7, @b.weight) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  %9: f32[1,4] = linear_grad_weight(%7, %2) [backward, stage 1, ipu 1, block "B"]  # model.py:7
  accumulate(&b.weight/accumulator, %9) {every=3} [backward, stage 1, ipu 1, block "B"]
  %10: f32[2,4] = linear(%x, @a.weight) [backward, stage 0, ipu 0, block "A"]  # model.py:5
  %11: f32[2,4] = relu(%10) [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %12: f32[2,4] = ipu_copy(%8) [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %13: f32[2,4] = activation_grad(%12, %11) {activation="relu"} [backward, stage 0, ipu 0, block "A"]  # model.py:6
  %14: f32[4,3] = linear_grad_weight(%13, %x) [backward, stage 0, ipu 0, block "A"]  # model.py:5
  accumulate(&a.weight/accumulator, %14) {every=3} [backward, stage 0, ipu 0, block "A"]
  sgd_update(@a.weight, &a.weight/accumulator, &optimizer/group0/hyper) {maximize=false, nesterov=false} [update, stage 0, ipu 0, block "A"]
  fill(&a.weight/accumulator) {value=0} [update, stage 0, ipu 0, block "A"]
  sgd_update(@b.weight, &b.weight/accumulator, &optimizer/group0/hyper@ipu1) {maximize=false, nesterov=false} [update, stage 1, ipu 1, block "B"]
  fill(&b.weight/accumulator) {value=0} [update, stage 1, ipu 1, block "B"]
  loss %4
  return (%4)
)");
}

TEST(CompileGraphTest, AnUnwritableDumpDirectoryIsNamed) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "popsim-dump-file";
  std::ofstream(file) << "a file, not a directory";
  setenv("POPSIM_DUMP_IR", file.c_str(), 1);
  const Error error = testing::captureError(
      [] { compiler::compileProgram(*twoBlockRegression(), trainingOnTwoIpus(), twoIpus()); });
  unsetenv("POPSIM_DUMP_IR");
  std::filesystem::remove(file);
  EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
  EXPECT_TRUE(testing::contains(error.what(), "POPSIM_DUMP_IR: cannot create the directory '" +
                                                  file.string() + "/compile-"));
}

} // namespace
} // namespace popsim
