// Golden IR files, one pair per pass under tests/ir: <pass>.ir is a graph
// (its first line the popsim-opt command that runs the pass on it) and
// <pass>.expected.ir what the pass leaves, or for a check the error it
// raises ("error: ..."). Each pair runs through popsim-opt's driver, so a
// change to a pass shows up as a diff of the program it leaves behind.
// POPSIM_UPDATE_GOLDEN=1 rewrites the expected files (read their diff).

#include "tools/opt_driver.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

std::vector<fs::path> goldenInputs() {
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(fs::path(POPSIM_SOURCE_DIR) / "tests" / "ir")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".ir" && name.find(".expected.") == std::string::npos) {
      inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

// The popsim-opt arguments on the input's first line ("# popsim-opt ...").
std::vector<std::string> commandOf(const fs::path& input) {
  std::ifstream in(input);
  std::string line;
  std::getline(in, line);
  const std::string prefix = "# popsim-opt ";
  EXPECT_EQ(line.rfind(prefix, 0), 0u) << input << " does not start with '" << prefix << "'";
  std::istringstream words(line.substr(prefix.size()));
  std::vector<std::string> arguments;
  for (std::string word; words >> word;)
    arguments.push_back(word);
  arguments.push_back(input.string());
  return arguments;
}

std::string passOf(const fs::path& input) { return input.stem().string(); }

TEST(GoldenIrTest, EveryPassHasAGoldenPair) {
  std::vector<std::string> covered;
  for (const fs::path& input : goldenInputs()) {
    for (const std::string& argument : commandOf(input)) {
      if (argument.rfind("--passes=", 0) == 0) covered.push_back(argument.substr(9));
    }
  }
  for (const char* name :
       {"stage-assignment",   "weight-sharding",   "autodiff",        "gradient-accumulation",
        "random-counters",    "replica-reduction", "loss-scaling",    "gradient-clipping",
        "optimizer-step",     "gradient-program",  "simplify-layout", "dead-code-elimination",
        "task-order",         "ipu-copies",        "recomputation",   "weight-gathers",
        "check-host-overlap", "check-loss",        "check-program",   "check-tasks"}) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), name), covered.end())
        << "no golden file runs the pass " << name;
  }
}

TEST(GoldenIrTest, EachPassLeavesItsExpectedProgram) {
  const bool update = std::getenv("POPSIM_UPDATE_GOLDEN") != nullptr &&
                      std::string(std::getenv("POPSIM_UPDATE_GOLDEN")) == "1";
  const std::vector<fs::path> inputs = goldenInputs();
  ASSERT_FALSE(inputs.empty());
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    std::ostringstream out;
    std::ostringstream err;
    const int status = tools::runOpt(commandOf(input), out, err);
    ASSERT_NE(status, 2) << err.str();
    const std::string result = status == 0 ? out.str() : err.str();
    const fs::path expected =
        input.parent_path() / (passOf(input) + ".expected" + input.extension().string());
    if (update) {
      std::ofstream(expected) << result;
      continue;
    }
    ASSERT_TRUE(fs::exists(expected)) << "run with POPSIM_UPDATE_GOLDEN=1 to write " << expected;
    EXPECT_EQ(result, readFile(expected));
    if (status == 0) {
      // The result reads back: running no pass on it prints it again.
      std::ostringstream again;
      std::ostringstream none;
      const fs::path temporary = fs::temp_directory_path() / ("golden-" + passOf(input) + ".ir");
      std::ofstream(temporary) << result;
      EXPECT_EQ(tools::runOpt({"--passes=", temporary.string()}, again, none), 0) << none.str();
      EXPECT_EQ(again.str(), result);
      fs::remove(temporary);
    }
  }
}

TEST(PopsimOptTest, BadCommandLinesAreNamed) {
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(tools::runOpt({"--optimizer=adagrad", "x.ir"}, out, err), 2);
  EXPECT_NE(err.str().find("--optimizer expects one of sgd, adam, adamw, rmsprop, lamb, got "
                           "'adagrad'"),
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
  EXPECT_EQ(tools::runOpt({"--stage=b:-1:0", "x.ir"}, out, err), 2);
  EXPECT_NE(err.str().find("--stage b:-1:0: stages and IPUs count from 0"), std::string::npos)
      << err.str();
}

TEST(PopsimOptTest, EveryBlockNeedsAStage) {
  // The stage-assignment input's blocks, with one of them left out.
  const fs::path input = fs::path(POPSIM_SOURCE_DIR) / "tests" / "ir" / "stage-assignment.ir";
  std::vector<std::string> command = commandOf(input);
  std::string dropped;
  for (auto it = command.begin(); it != command.end(); ++it) {
    if (it->rfind("--stage=", 0) == 0) {
      dropped = it->substr(8, it->find(':') - 8);
      command.erase(it);
      break;
    }
  }
  ASSERT_FALSE(dropped.empty());
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(tools::runOpt(command, out, err), 1);
  EXPECT_NE(err.str().find("the graph has block '" + dropped + "' but no --stage places it"),
            std::string::npos)
      << err.str();
  // Without any --stage too (the compiler would assert).
  command.erase(std::remove_if(
                    command.begin(), command.end(),
                    [](const std::string& argument) { return argument.rfind("--stage=", 0) == 0; }),
                command.end());
  err.str("");
  EXPECT_EQ(tools::runOpt(command, out, err), 1);
  EXPECT_NE(err.str().find("but no --stage places it"), std::string::npos) << err.str();
}

} // namespace
} // namespace popsim
