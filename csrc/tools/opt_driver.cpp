// popsim-opt's driver:
// 1. the input file (or "-" for standard input) is read as IR text: its
//    settings header (compiler/program_text.h) and its graph; --set lines
//    change settings after the header's;
// 2. the passes named by --passes run in order under one pipeline (verified,
//    and dumped with POPSIM_DUMP_IR like the compiler's), or without
//    --passes the whole compile pipeline for the settings;
// 3. the result is printed in the same form (it can be read again).
// With --split-input-file each "// -----" case of the file runs on its own.

#include "tools/opt_driver.h"

#include "common/error.h"
#include "common/strings.h"
#include "compiler/passes.h"
#include "compiler/program_text.h"
#include "ir/printer.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace popsim::tools {
namespace {

// A bad command line: the message and the usage go to stderr, status 2.
struct UsageError {
  std::string message;
};

std::vector<std::string> splitList(const std::string& list) {
  std::vector<std::string> items;
  std::istringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

struct Invocation {
  std::vector<std::string> settings; // --set, in order
  std::vector<std::string> passes;
  bool passesGiven = false; // without --passes: the compile pipeline
  std::string input;
  bool listPasses = false;
  bool help = false;
  bool locations = true;
  bool splitInput = false;
};

std::string placeOf(const std::string& setting) { return "--set '" + setting + "'"; }

Invocation parseArguments(const std::vector<std::string>& arguments) {
  Invocation run;
  for (const std::string& argument : arguments) {
    if (argument == "--help" || argument == "-h") {
      run.help = true;
      continue;
    }
    if (argument == "-" || argument.rfind("--", 0) != 0) {
      if (!run.input.empty()) throw UsageError{"more than one input file"};
      run.input = argument;
      continue;
    }
    const size_t equals = argument.find('=');
    const std::string option = argument.substr(0, equals);
    const bool hasValue = equals != std::string::npos;
    const std::string value = hasValue ? argument.substr(equals + 1) : "";
    const auto need = [&] {
      if (!hasValue) throw UsageError{option + " needs a value: " + option + "=..."};
      return value;
    };
    if (option == "--passes") {
      run.passes = splitList(need());
      run.passesGiven = true;
    } else if (option == "--set") {
      run.settings.push_back(need());
      compiler::CompileSettings scratch; // a bad setting is a bad command line
      try {
        compiler::applySetting(scratch, run.settings.back(), placeOf(run.settings.back()));
      } catch (const CoreError& error) {
        throw UsageError{error.what()};
      }
    } else if (option == "--list-passes") {
      run.listPasses = true;
    } else if (option == "--no-locations") {
      run.locations = false;
    } else if (option == "--split-input-file") {
      run.splitInput = true;
    } else {
      throw UsageError{"unknown option " + option};
    }
  }
  return run;
}

// The compiler asserts that every block has a stage (the Python API's
// strategies check it for users); here a graph whose blocks the
// stage-assignment pass will place needs a stage setting for each of them.
void checkStagesCoverBlocks(const ir::Graph& graph,
                            const std::vector<compiler::StageAssignment>& stages) {
  for (const ir::BlockAnnotation& block : graph.blocks()) {
    const bool placed = std::any_of(stages.begin(), stages.end(),
                                    [&](const auto& stage) { return stage.block == block.name; });
    if (!placed) {
      throwOptionError(
          "stage", strCat("the graph has block '", block.name,
                          "' but no stage setting places it: add 'stage = {block=\"", block.name,
                          "\", stage=S, ipu=I}' to the options header, or give --set with it."));
    }
  }
}

std::string readInput(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) throwError(ErrorKind::InvalidInput, strCat("cannot read '", path, "'."));
    text << in.rdbuf();
  }
  return text.str();
}

// One program through the passes: its result, or its error on `err`.
int runProgram(const Invocation& run, std::string_view text, std::ostream& out, std::ostream& err) {
  try {
    std::unique_ptr<compiler::PassPipeline> pipeline;
    if (run.passesGiven) { // a misspelt pass is named before the file is read
      pipeline = std::make_unique<compiler::PassPipeline>("popsim-opt");
      for (const std::string& name : run.passes) {
        pipeline->add(compiler::createPass(name));
      }
    }
    compiler::ProgramText program = compiler::parseProgramText(text);
    compiler::CompileSettings& settings = program.settings;
    for (const std::string& setting : run.settings)
      compiler::applySetting(settings, setting, placeOf(setting));
    if (!run.passesGiven) pipeline = compiler::compilePipeline(settings.options);
    const bool assignsStages =
        !run.passesGiven ||
        std::find(run.passes.begin(), run.passes.end(), "stage-assignment") != run.passes.end();
    if (assignsStages) checkStagesCoverBlocks(*program.graph, settings.options.stages);
    compiler::PassContext context(settings.options, settings.system);
    context.setDisabled(settings.disabledPasses);
    context.setDump(compiler::IrDump::fromEnvironment());
    compiler::runPipeline(*pipeline, *program.graph, context);
    ir::PrintOptions print;
    print.full = true;
    print.fullPaths = true;
    print.locations = run.locations;
    out << compiler::printProgramText(*program.graph, settings, print);
    return 0;
  } catch (const CoreError& error) {
    err << "error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace

std::vector<InputCase> splitInputFile(std::string_view text) {
  std::vector<InputCase> cases;
  std::string current;
  size_t line = 1;
  size_t firstLine = 1;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string_view row =
        text.substr(start, end == std::string_view::npos ? text.npos : end - start);
    const size_t first = row.find_first_not_of(" \t");
    const size_t last = row.find_last_not_of(" \t\r");
    if (first != std::string_view::npos && row.substr(first, last - first + 1) == "// -----") {
      cases.push_back({firstLine, current});
      current = std::string(line, '\n'); // the next case keeps the file's line numbers
      firstLine = line + 1;
    } else {
      current.append(row);
      current += '\n';
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
    ++line;
  }
  cases.push_back({firstLine, current});
  return cases;
}

std::string usage() {
  return R"(usage: popsim-opt [options] FILE|-

Reads a program in popsim's IR text (as POPSIM_DUMP_IR writes it: a header
"options { ... }" with the compilation's settings, then the graph), runs
compiler passes on it and prints the result in the same form.

  --passes=a,b,...        the passes to run, in order (default: the whole
                          compile pipeline for the settings; --passes= runs
                          none, printing the program as read)
  --set='key = value'     change a setting after the file's header, as a
                          header line writes it (a group, stage or
                          replica_group record is added); repeatable
  --split-input-file      the file holds cases separated by lines "// -----";
                          each runs on its own and the results are printed
                          separated the same way
  --list-passes           print every pass, then the compile pipeline for
                          the --set settings
  --no-locations          print without source locations

A dump of the compiler's first step (00-import.ir) compiles with no options
to the program the compiler built; a dump after pass P, run with
--passes=Q, gives the dump after the pass Q that followed P.
)";
}

namespace {

// The command line, or (a bad one, said on `err` with the usage) nothing.
std::optional<Invocation> invocationOf(const std::vector<std::string>& arguments,
                                       std::ostream& err) {
  try {
    return parseArguments(arguments);
  } catch (const UsageError& error) {
    err << "popsim-opt: " << error.message << "\n\n" << usage();
    return std::nullopt;
  }
}

} // namespace

int runOptOnText(const std::vector<std::string>& arguments, std::string_view text,
                 std::ostream& out, std::ostream& err) {
  const std::optional<Invocation> run = invocationOf(arguments, err);
  return run.has_value() ? runProgram(*run, text, out, err) : 2;
}

int runOpt(const std::vector<std::string>& arguments, std::ostream& out, std::ostream& err) {
  const std::optional<Invocation> invocation = invocationOf(arguments, err);
  if (!invocation.has_value()) return 2;
  const Invocation& run = *invocation;
  if (run.help) {
    out << usage();
    return 0;
  }
  if (run.listPasses) {
    compiler::CompileSettings settings;
    for (const std::string& setting : run.settings)
      compiler::applySetting(settings, setting, placeOf(setting));
    out << "passes:\n";
    for (const std::string& name : compiler::allPassNames()) {
      out << "  " << name << "\n";
    }
    out << "compile pipeline for these settings:\n"
        << compiler::compilePipeline(settings.options)->describe(2);
    return 0;
  }
  if (run.input.empty()) {
    err << "popsim-opt: no input file (use - for standard input)\n\n" << usage();
    return 2;
  }
  std::string text;
  try {
    text = readInput(run.input);
  } catch (const CoreError& error) {
    err << "error: " << error.what() << "\n";
    return 1;
  }
  if (!run.splitInput) return runProgram(run, text, out, err);
  int status = 0;
  const std::vector<InputCase> cases = splitInputFile(text);
  for (size_t index = 0; index < cases.size(); ++index) {
    if (index > 0) out << "// -----\n";
    if (runProgram(run, cases[index].text, out, err) != 0) status = 1;
  }
  return status;
}

} // namespace popsim::tools
