// popsim-opt's driver:
// 1. the options become compiler::CompilerOptions and a device system
//    (--program, --optimizer, --group, ... as the Python API would fill
//    them);
// 2. the input file (or "-" for standard input) is parsed (ir::parseGraph);
// 3. the passes named by --passes run in order under one pipeline (verified,
//    and dumped with POPSIM_DUMP_IR like the compiler's), or without
//    --passes the whole compile pipeline for the options;
// 4. the result is printed in the full form (it can be read again).

#include "tools/opt_driver.h"

#include "common/error.h"
#include "common/strings.h"
#include "compiler/passes.h"
#include "ir/parser.h"
#include "ir/printer.h"

#include <algorithm>
#include <fstream>
#include <iostream>
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

int64_t integerOf(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError{strCat(option, " expects an integer, got '", text, "'")};
}

double numberOf(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError{strCat(option, " expects a number, got '", text, "'")};
}

template <typename Enum>
Enum choiceOf(const std::string& option, const std::string& text,
              const std::vector<std::pair<const char*, Enum>>& choices) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) {
    if (text == name) return value;
    names.push_back(name);
  }
  throw UsageError{strCat(option, " expects one of ", join(names, ", "), ", got '", text, "'")};
}

struct Invocation {
  compiler::CompilerOptions options;
  device::IpuSystemConfig system;
  std::vector<std::string> passes;
  bool passesGiven = false; // without --passes: the compile pipeline
  std::string input;
  bool listPasses = false;
  bool help = false;
  bool locations = true;
};

Invocation parseArguments(const std::vector<std::string>& arguments) {
  Invocation run;
  compiler::TrainingConfig& training = run.options.training;
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
    } else if (option == "--list-passes") {
      run.listPasses = true;
    } else if (option == "--no-locations") {
      run.locations = false;
    } else if (option == "--program") {
      run.options.program =
          choiceOf<compiler::ProgramKind>(option, need(),
                                          {{"inference", compiler::ProgramKind::Inference},
                                           {"training", compiler::ProgramKind::Training},
                                           {"gradients", compiler::ProgramKind::Gradients}});
    } else if (option == "--optimizer") {
      training.optimizer =
          choiceOf<compiler::OptimizerKind>(option, need(),
                                            {{"sgd", compiler::OptimizerKind::Sgd},
                                             {"adam", compiler::OptimizerKind::Adam},
                                             {"adamw", compiler::OptimizerKind::AdamW},
                                             {"rmsprop", compiler::OptimizerKind::Rmsprop},
                                             {"lamb", compiler::OptimizerKind::Lamb}});
    } else if (option == "--group") {
      training.groups.push_back({splitList(need())});
    } else if (option == "--momentum" || option == "--nesterov" || option == "--amsgrad" ||
               option == "--centered" || option == "--maximize" ||
               option == "--no-bias-correction") {
      if (training.groups.empty()) throw UsageError{option + " applies to the last --group"};
      compiler::ParameterGroup& group = training.groups.back();
      if (option == "--momentum") group.hasMomentum = true;
      if (option == "--nesterov") group.nesterov = true;
      if (option == "--amsgrad") group.amsgrad = true;
      if (option == "--centered") group.centered = true;
      if (option == "--maximize") group.maximize = true;
      if (option == "--no-bias-correction") group.biasCorrection = false;
    } else if (option == "--accumulation") {
      run.options.gradientAccumulation = integerOf(option, need());
    } else if (option == "--device-iterations") {
      run.options.deviceIterations = integerOf(option, need());
    } else if (option == "--replicas") {
      training.replicas = integerOf(option, need());
    } else if (option == "--system-ipus") {
      training.systemIpus = integerOf(option, need());
    } else if (option == "--ipus") {
      run.system.numIpus = integerOf(option, need());
    } else if (option == "--io-tiles") {
      run.system.ioTiles = integerOf(option, need());
    } else if (option == "--max-grad-norm") {
      training.maxGradNorm = numberOf(option, need());
    } else if (option == "--gradient-scale") {
      training.gradientScale = numberOf(option, need());
    } else if (option == "--running-mean") {
      training.runningMean = true;
    } else if (option == "--loss-scaling") {
      training.lossScaling = numberOf(option, need());
    } else if (option == "--loss-scaling-state") {
      training.lossScalingState = true;
    } else if (option == "--automatic-loss-scaling") {
      training.lossScalingState = true;
      training.automaticLossScaling = true;
    } else if (option == "--sharded-state") {
      training.shardedParameters = splitList(need());
    } else if (option == "--sharded-weights") {
      training.shardedWeights = splitList(need());
    } else if (option == "--anchor-gradients") {
      training.anchoredGradients = splitList(need());
    } else if (option == "--group-replicas") { // name:size:stride
      const std::string spec = need();
      const size_t first = spec.find(':');
      const size_t second = spec.find(':', first == std::string::npos ? 0 : first + 1);
      if (first == std::string::npos || second == std::string::npos) {
        throw UsageError{"--group-replicas expects name:size:stride"};
      }
      training.groupedParameters[spec.substr(0, first)] = {
          integerOf(option, spec.substr(first + 1, second - first - 1)),
          integerOf(option, spec.substr(second + 1))};
    } else if (option == "--stage") { // block:stage:ipu
      const std::string spec = need();
      const size_t first = spec.rfind(':', spec.rfind(':') - 1);
      const size_t second = spec.rfind(':');
      if (first == std::string::npos || second == first) {
        throw UsageError{"--stage expects block:stage:ipu"};
      }
      const compiler::StageAssignment stage{
          spec.substr(0, first), integerOf(option, spec.substr(first + 1, second - first - 1)),
          integerOf(option, spec.substr(second + 1))};
      if (stage.stage < 0 || stage.ipu < 0) {
        throw UsageError{strCat("--stage ", spec, ": stages and IPUs count from 0")};
      }
      run.options.stages.push_back(stage);
    } else if (option == "--schedule") {
      run.options.schedule =
          choiceOf<compiler::ScheduleKind>(option, need(),
                                           {{"interleaved", compiler::ScheduleKind::Interleaved},
                                            {"grouped", compiler::ScheduleKind::Grouped},
                                            {"sequential", compiler::ScheduleKind::Sequential}});
    } else if (option == "--recomputation") {
      run.options.recomputation = true;
    } else {
      throw UsageError{"unknown option " + option};
    }
  }
  return run;
}

// The compiler asserts that every block has a stage (the Python API's
// strategies check it for users); here a graph whose blocks the
// stage-assignment pass will place needs a --stage for each of them.
void checkStagesCoverBlocks(const ir::Graph& graph,
                            const std::vector<compiler::StageAssignment>& stages) {
  for (const ir::BlockAnnotation& block : graph.blocks()) {
    const bool placed = std::any_of(stages.begin(), stages.end(),
                                    [&](const auto& stage) { return stage.block == block.name; });
    if (!placed) {
      throwError(ErrorKind::InvalidOption,
                 strCat("the graph has block '", block.name, "' but no --stage places it (",
                        "give --stage=", block.name, ":stage:ipu)."));
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

} // namespace

std::string usage() {
  return R"(usage: popsim-opt [options] FILE|-

Reads a graph in popsim's IR text (as POPSIM_DUMP_IR writes it), runs compiler
passes on it and prints the result.

  --passes=a,b,...        the passes to run, in order (default: the whole
                          compile pipeline for the options below; --passes=
                          runs none, printing the graph as read)
  --list-passes           print every pass, then the compile pipeline
  --no-locations          print without source locations

The options the passes read (as popsim.Options sets them):
  --program=inference|training|gradients
  --optimizer=sgd|adam|adamw|rmsprop|lamb
  --group=p1,p2,...       a parameter group (repeat for more); then
    --momentum --nesterov --amsgrad --centered --maximize --no-bias-correction
  --accumulation=N        gradient accumulation
  --device-iterations=N
  --replicas=N --system-ipus=N --sharded-state=p,... --sharded-weights=p,...
  --group-replicas=param:size:stride
  --max-grad-norm=X --gradient-scale=X --running-mean
  --loss-scaling=X --loss-scaling-state --automatic-loss-scaling
  --anchor-gradients=p,...
  --stage=block:stage:ipu (repeat for each block) --schedule=interleaved|grouped|sequential
  --recomputation --ipus=N --io-tiles=N
)";
}

int runOpt(const std::vector<std::string>& arguments, std::ostream& out, std::ostream& err) {
  Invocation run;
  try {
    run = parseArguments(arguments);
  } catch (const UsageError& error) {
    err << "popsim-opt: " << error.message << "\n\n" << usage();
    return 2;
  }
  if (run.help) {
    out << usage();
    return 0;
  }
  if (run.listPasses) {
    out << "passes:\n";
    for (const std::string& name : compiler::allPassNames()) {
      out << "  " << name << "\n";
    }
    out << "compile pipeline for these options:\n"
        << compiler::compilePipeline(run.options)->describe(2);
    return 0;
  }
  if (run.input.empty()) {
    err << "popsim-opt: no input file (use - for standard input)\n\n" << usage();
    return 2;
  }
  try {
    std::unique_ptr<compiler::PassPipeline> pipeline;
    if (!run.passesGiven) {
      pipeline = compiler::compilePipeline(run.options);
    } else {
      pipeline = std::make_unique<compiler::PassPipeline>("popsim-opt");
      for (const std::string& name : run.passes) {
        pipeline->add(compiler::createPass(name));
      }
    }
    std::unique_ptr<ir::Graph> graph = ir::parseGraph(readInput(run.input));
    const bool assignsStages =
        !run.passesGiven ||
        std::find(run.passes.begin(), run.passes.end(), "stage-assignment") != run.passes.end();
    if (assignsStages) checkStagesCoverBlocks(*graph, run.options.stages);
    compiler::PassContext context(run.options, run.system);
    context.setDump(compiler::IrDump::fromEnvironment());
    compiler::runPipeline(*pipeline, *graph, context);
    ir::PrintOptions print;
    print.full = true;
    print.fullPaths = true;
    print.locations = run.locations;
    out << ir::printGraph(*graph, print);
    return 0;
  } catch (const Error& error) {
    err << "error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace popsim::tools
