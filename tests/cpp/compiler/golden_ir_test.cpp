// IR tests under tests/ir, in torch-mlir's style:
// - tests/ir/<pass>.ir holds small cases for one pass or check, separated by
//   lines "// -----". Its first line is the popsim-opt command
//   ("// RUN: popsim-opt --split-input-file --passes=<pass> %s"); each case
//   is a program (settings header and graph) with CHECK lines saying what
//   the pass must leave (or, for a failing check, the error it raises:
//   "// CHECK: error: ..."), matched by tools/file_check.h.
// - tests/ir/pipeline/<name>.ir is a whole compilation's first dump, and
//   <name>.expected.ir the program popsim-opt compiles it to with no
//   options, compared as a whole: a smoke test of every pass together.
//   POPSIM_UPDATE_GOLDEN=1 rewrites it (read its diff).

#include "tools/file_check.h"
#include "tools/opt_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace popsim {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const fs::path& irDirectory() {
  static const fs::path directory = fs::path(POPSIM_SOURCE_DIR) / "tests" / "ir";
  return directory;
}

std::vector<fs::path> filesIn(const fs::path& directory, bool expected) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".ir" &&
        (name.find(".expected.") != std::string::npos) == expected) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A pass test's command: the popsim-opt arguments of its RUN line, without
// the file (%s) and --split-input-file, which the test does itself.
struct Command {
  std::vector<std::string> arguments;
  bool split = false;
};

Command commandOf(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  const std::string prefix = "// RUN: popsim-opt ";
  Command command;
  EXPECT_EQ(line.rfind(prefix, 0), 0u) << file << " does not start with '" << prefix << "'";
  std::istringstream words(line.substr(std::min(line.size(), prefix.size())));
  for (std::string word; words >> word;) {
    if (word == "--split-input-file") {
      command.split = true;
    } else if (word != "%s") {
      command.arguments.push_back(word);
    }
  }
  return command;
}

std::string passOf(const Command& command) {
  for (const std::string& argument : command.arguments) {
    if (argument.rfind("--passes=", 0) == 0) return argument.substr(9);
  }
  return "";
}

TEST(IrTest, EveryPassHasSmallCases) {
  std::map<std::string, size_t> cases;
  for (const fs::path& file : filesIn(irDirectory(), false)) {
    const Command command = commandOf(file);
    EXPECT_TRUE(command.split) << file << ": the cases of a pass's file run one by one";
    EXPECT_EQ(passOf(command), file.stem().string()) << file << " runs another pass";
    cases[passOf(command)] += tools::splitInputFile(readFile(file)).size();
  }
  for (const char* name :
       {"stage-assignment",   "weight-sharding",   "autodiff",        "gradient-accumulation",
        "random-counters",    "replica-reduction", "loss-scaling",    "gradient-clipping",
        "optimizer-step",     "gradient-program",  "simplify-layout", "dead-code-elimination",
        "task-order",         "ipu-copies",        "recomputation",   "weight-gathers",
        "check-host-overlap", "check-loss",        "check-program",   "check-tasks"}) {
    EXPECT_GE(cases[name], 2u) << "tests/ir/" << name << ".ir should hold cases of the pass";
  }
}

TEST(IrTest, EachCaseMeetsItsChecks) {
  const std::vector<fs::path> files = filesIn(irDirectory(), false);
  ASSERT_FALSE(files.empty());
  for (const fs::path& file : files) {
    const Command command = commandOf(file);
    const std::string name = "tests/ir/" + file.filename().string();
    for (const tools::InputCase& input : tools::splitInputFile(readFile(file))) {
      SCOPED_TRACE(name + ":" + std::to_string(input.firstLine));
      std::ostringstream out;
      std::ostringstream err;
      const int status = tools::runOptOnText(command.arguments, input.text, out, err);
      ASSERT_NE(status, 2) << err.str();
      const std::string result = status == 0 ? out.str() : err.str();
      const std::string failure = tools::fileCheck(input.text, result, name);
      EXPECT_TRUE(failure.empty()) << failure;
      if (status != 0) continue;
      // The result reads back: running no pass on it prints it again.
      std::ostringstream again;
      std::ostringstream none;
      EXPECT_EQ(tools::runOptOnText({"--passes="}, result, again, none), 0) << none.str();
      EXPECT_EQ(again.str(), result);
    }
  }
}

TEST(IrTest, WholeCompilationsGiveTheirExpectedPrograms) {
  const bool update = std::getenv("POPSIM_UPDATE_GOLDEN") != nullptr &&
                      std::string(std::getenv("POPSIM_UPDATE_GOLDEN")) == "1";
  const std::vector<fs::path> inputs = filesIn(irDirectory() / "pipeline", false);
  ASSERT_FALSE(inputs.empty());
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    std::ostringstream out;
    std::ostringstream err;
    ASSERT_EQ(tools::runOpt({input.string()}, out, err), 0) << err.str();
    const fs::path expected = input.parent_path() / (input.stem().string() + ".expected.ir");
    if (update) {
      std::ofstream(expected) << out.str();
      continue;
    }
    ASSERT_TRUE(fs::exists(expected)) << "run with POPSIM_UPDATE_GOLDEN=1 to write " << expected;
    EXPECT_EQ(out.str(), readFile(expected));
  }
}

// The checker itself: what each directive accepts and refuses.
TEST(FileCheckTest, DirectivesMatchInOrder) {
  const std::string output = "graph(%x: f32[4]) {\n"
                             "  %0: f32[4] = relu(%x)\n"
                             "  %1: f32[4] = tanh(%0)\n"
                             "  return (%1)\n"
                             "}\n";
  const auto check = [&](const std::string& checks) {
    return tools::fileCheck(checks, output, "case.ir");
  };
  EXPECT_EQ(check("// CHECK: graph(\n"
                  "// CHECK-NEXT: [[R:%[0-9]+]]: f32[4] = relu(%x)\n"
                  "// CHECK-NEXT: tanh([[R]])\n"
                  "// CHECK-SAME: {{^}}\n"
                  "// CHECK-NOT: add\n"
                  "// CHECK: return"),
            "");
  EXPECT_EQ(check("// CHECK: %0:   f32[4]   =  relu"), ""); // spaces match any spaces
  EXPECT_NE(check("// CHECK: tanh\n// CHECK: relu")
                .find("case.ir:2: CHECK: expected 'relu' from output line 3 on"),
            std::string::npos);
  EXPECT_NE(check("// CHECK: relu\n// CHECK-NEXT: return")
                .find("case.ir:2: CHECK-NEXT: expected 'return' on output line 3"),
            std::string::npos);
  EXPECT_NE(check("// CHECK: graph\n// CHECK-NOT: tanh\n// CHECK: return")
                .find("case.ir:2: CHECK-NOT: 'tanh' found on output line 3"),
            std::string::npos);
  EXPECT_NE(check("// CHECK: tanh([[X]])").find("[[X]] is used before a match defines it"),
            std::string::npos);
  EXPECT_NE(check("// CHECK-NXT: relu").find("'CHECK-NXT' is not a directive"), std::string::npos);
  EXPECT_NE(check("# nothing to check").find("has no CHECK directive, so it cannot fail"),
            std::string::npos);
}

TEST(PopsimOptTest, SplitInputFileKeepsLineNumbers) {
  const std::vector<tools::InputCase> cases =
      tools::splitInputFile("// RUN\ngraph() {\n}\n// -----\n\ngraph(%x: f32[]) {\n  bad\n}\n");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[1].firstLine, 5u);
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(tools::runOptOnText({"--passes="}, cases[1].text, out, err), 1);
  EXPECT_NE(err.str().find("IR text, line 7, column 3"), std::string::npos) << err.str();
}

TEST(PopsimOptTest, BadCommandLinesAreNamed) {
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(tools::runOpt({"--set=optimizer = adagrad", "x.ir"}, out, err), 2);
  EXPECT_NE(err.str().find("--set 'optimizer = adagrad', column 13: 'adagrad' is not one of sgd, "
                           "adam, adamw, rmsprop, lamb"),
            std::string::npos)
      << err.str();
  err.str("");
  EXPECT_EQ(tools::runOpt({"--set=accumulation = 4", "x.ir"}, out, err), 2);
  EXPECT_NE(err.str().find("'accumulation' is not a setting (the settings: program, schedule"),
            std::string::npos)
      << err.str();
  err.str("");
  EXPECT_EQ(tools::runOpt({"--passes=autodif", "-"}, out, err), 1);
  EXPECT_NE(err.str().find("there is no pass 'autodif'. The passes: "), std::string::npos)
      << err.str();
  err.str("");
  EXPECT_EQ(tools::runOpt({"/nonexistent/graph.ir"}, out, err), 1);
  EXPECT_NE(err.str().find("cannot read '/nonexistent/graph.ir'"), std::string::npos) << err.str();
  err.str("");
  EXPECT_EQ(tools::runOpt({"--set=stage = {block=\"b\", stage=-1, ipu=0}", "x.ir"}, out, err), 2);
  EXPECT_NE(err.str().find("pipeline stage -1 is outside 0..4095"), std::string::npos) << err.str();
}

TEST(PopsimOptTest, EveryBlockNeedsAStage) {
  const std::string program = "options {\n"
                              "  stage = {block=\"A\", stage=0, ipu=0}\n"
                              "}\n"
                              "graph(%x: f32[4]) {\n"
                              "  blocks:\n"
                              "    \"A\"\n"
                              "    \"B\"\n"
                              "  %0: f32[4] = relu(%x) [block \"A\"]\n"
                              "  %1: f32[4] = tanh(%0) [block \"B\"]\n"
                              "  return (%1)\n"
                              "}\n";
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(tools::runOptOnText({"--passes=stage-assignment"}, program, out, err), 1);
  EXPECT_NE(err.str().find("the graph has block 'B' but no stage setting places it: add 'stage = "
                           "{block=\"B\", stage=S, ipu=I}' to the options header"),
            std::string::npos)
      << err.str();
  err.str("");
  EXPECT_EQ(tools::runOptOnText({"--passes=stage-assignment",
                                 "--set=stage = {block=\"B\", stage=1, ipu=1}", "--set=ipus = 2"},
                                program, out, err),
            0)
      << err.str();
}

} // namespace
} // namespace popsim
