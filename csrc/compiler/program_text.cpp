// The settings header of IR text: one table of settings, each printed and
// read by the same entry, so a setting added to the table round-trips.

#include "compiler/program_text.h"

#include "common/strings.h"
#include "compiler/pass.h"
#include "device/chip_spec.h"
#include "ir/line_reader.h"
#include "ir/parser.h"
#include "ir/placement.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace popsim::compiler {
namespace {

using ir::LineReader;

template <typename Enum> using Choices = std::vector<std::pair<const char*, Enum>>;

const Choices<ProgramKind> kPrograms = {{"inference", ProgramKind::Inference},
                                        {"training", ProgramKind::Training},
                                        {"gradients", ProgramKind::Gradients}};
const Choices<ScheduleKind> kSchedules = {{"interleaved", ScheduleKind::Interleaved},
                                          {"grouped", ScheduleKind::Grouped},
                                          {"sequential", ScheduleKind::Sequential}};
const Choices<OptimizerKind> kOptimizers = {{"sgd", OptimizerKind::Sgd},
                                            {"adam", OptimizerKind::Adam},
                                            {"adamw", OptimizerKind::AdamW},
                                            {"rmsprop", OptimizerKind::Rmsprop},
                                            {"lamb", OptimizerKind::Lamb}};
const Choices<OutputMode> kOutputModes = {{"all", OutputMode::All},
                                          {"final", OutputMode::Final},
                                          {"every_n", OutputMode::EveryN},
                                          {"sum", OutputMode::Sum}};
const Choices<device::ChipVersion> kChips = {{"Mk1", device::ChipVersion::Mk1},
                                             {"Mk2", device::ChipVersion::Mk2},
                                             {"Bow", device::ChipVersion::Bow}};

const Choices<ProgramKind>& choicesOf(ProgramKind) { return kPrograms; }
const Choices<ScheduleKind>& choicesOf(ScheduleKind) { return kSchedules; }
const Choices<OptimizerKind>& choicesOf(OptimizerKind) { return kOptimizers; }
const Choices<OutputMode>& choicesOf(OutputMode) { return kOutputModes; }
const Choices<device::ChipVersion>& choicesOf(device::ChipVersion) { return kChips; }

// A value as the header writes it.
std::string text(int64_t value) { return std::to_string(value); }
std::string text(uint64_t value) { return std::to_string(value); }
std::string text(double value) { return ir::exactNumber(value); }
std::string text(bool value) { return value ? "true" : "false"; }
std::string text(const std::string& value) { return "\"" + value + "\""; }
template <typename Range> std::string listText(const Range& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items)
    quoted.push_back(text(item));
  return "[" + join(quoted, ", ") + "]";
}
std::string text(const std::vector<std::string>& items) { return listText(items); }
std::string text(const std::set<std::string>& items) { return listText(items); }
template <typename Enum, typename = decltype(choicesOf(Enum{}))> std::string text(Enum value) {
  for (const auto& [name, choice] : choicesOf(value)) {
    if (choice == value) return name;
  }
  return "?";
}

// A value read back: the same grammar, checked.
void read(LineReader& in, int64_t& value) { value = in.integer(); }
void read(LineReader& in, uint64_t& value) {
  const int64_t number = in.integer();
  if (number < 0) in.fail("expected a count of 0 or more");
  value = static_cast<uint64_t>(number);
}
void read(LineReader& in, double& value) { value = in.number(); }
void read(LineReader& in, bool& value) {
  const std::string word = in.word();
  if (word != "true" && word != "false") in.fail("expected true or false");
  value = word == "true";
}
void read(LineReader& in, std::string& value) { value = in.quoted(); }
template <typename Add> void readList(LineReader& in, Add add) {
  in.expect("[");
  if (in.consume("]")) return;
  do {
    add(in.quoted());
  } while (in.consume(","));
  in.expect("]");
}
void read(LineReader& in, std::vector<std::string>& items) {
  items.clear();
  readList(in, [&](std::string item) { items.push_back(std::move(item)); });
}
void read(LineReader& in, std::set<std::string>& items) {
  items.clear();
  readList(in, [&](std::string item) { items.insert(std::move(item)); });
}
template <typename Enum, typename = decltype(choicesOf(Enum{}))>
void read(LineReader& in, Enum& value) {
  const std::string word = in.word();
  std::vector<std::string> names;
  for (const auto& [name, choice] : choicesOf(value)) {
    if (word == name) {
      value = choice;
      return;
    }
    names.push_back(name);
  }
  in.fail(strCat("'", word, "' is not one of ", join(names, ", ")));
}

// "{name=value, ...}": `field(name)` reads the value of a field it knows
// and returns false for one it does not.
template <typename Field>
void readRecord(LineReader& in, const std::string& record, const std::vector<std::string>& fields,
                Field field) {
  in.expect("{");
  if (in.consume("}")) return;
  do {
    const std::string name = in.word();
    in.expect("=");
    if (!field(name)) {
      in.fail(strCat("a ", record, " has no field '", name, "' (its fields: ", join(fields, ", "),
                     ")"));
    }
  } while (in.consume(","));
  in.expect("}");
}

using Lines = std::vector<std::string>;

// One setting of the header: how it prints (lines "key = value", none at
// its default) and how it reads back.
struct Setting {
  std::string key;
  std::function<void(const CompileSettings&, Lines&)> print;
  std::function<void(LineReader&, CompileSettings&)> read;
  bool repeated = false; // a record per line, in order (group, stage, ...)
};

// A setting held in one field, which `access` reaches from the settings
// (a generic lambda, for const and mutable settings alike).
template <typename Access> Setting field(std::string key, Access access) {
  return {key,
          [key, access](const CompileSettings& settings, Lines& lines) {
            static const CompileSettings defaults;
            if (access(settings) != access(defaults)) {
              lines.push_back(key + " = " + text(access(settings)));
            }
          },
          [access](LineReader& in, CompileSettings& settings) { read(in, access(settings)); }};
}

// Records: a line each.
Setting stages() {
  return {"stage",
          [](const CompileSettings& settings, Lines& lines) {
            for (const StageAssignment& stage : settings.options.stages) {
              lines.push_back(strCat("stage = {block=", text(stage.block), ", stage=", stage.stage,
                                     ", ipu=", stage.ipu, "}"));
            }
          },
          [](LineReader& in, CompileSettings& settings) {
            StageAssignment stage;
            readRecord(in, "stage", {"block", "stage", "ipu"}, [&](const std::string& name) {
              if (name == "block")
                read(in, stage.block);
              else if (name == "stage")
                read(in, stage.stage);
              else if (name == "ipu")
                read(in, stage.ipu);
              else
                return false;
              return true;
            });
            if (stage.block.empty()) in.fail("a stage names its block: block=\"...\"");
            ir::Placement placement;
            placement.stage = stage.stage;
            placement.ipu = stage.ipu;
            if (const auto problem = ir::placementProblem(placement)) in.fail(*problem);
            settings.options.stages.push_back(stage);
          },
          true};
}

// A parameter group's flags, by their names in the header.
const std::vector<std::pair<const char*, bool ParameterGroup::*>> kGroupFlags = {
    {"momentum", &ParameterGroup::hasMomentum},
    {"nesterov", &ParameterGroup::nesterov},
    {"amsgrad", &ParameterGroup::amsgrad},
    {"centered", &ParameterGroup::centered},
    {"maximize", &ParameterGroup::maximize},
    {"bias_correction", &ParameterGroup::biasCorrection},
    {"tf_variant", &ParameterGroup::tfVariant}};

Setting groups() {
  return {"group",
          [](const CompileSettings& settings, Lines& lines) {
            static const ParameterGroup defaults;
            for (const ParameterGroup& group : settings.options.training.groups) {
              std::string line = "group = {parameters=" + text(group.parameters);
              for (const auto& [name, flag] : kGroupFlags) {
                if (group.*flag != defaults.*flag)
                  line += strCat(", ", name, "=", text(group.*flag));
              }
              lines.push_back(line + "}");
            }
          },
          [](LineReader& in, CompileSettings& settings) {
            ParameterGroup group;
            std::vector<std::string> fields = {"parameters"};
            for (const auto& flag : kGroupFlags)
              fields.push_back(flag.first);
            readRecord(in, "group", fields, [&](const std::string& name) {
              if (name == "parameters") {
                read(in, group.parameters);
                return true;
              }
              for (const auto& [flagName, flag] : kGroupFlags) {
                if (name == flagName) {
                  read(in, group.*flag);
                  return true;
                }
              }
              return false;
            });
            settings.options.training.groups.push_back(std::move(group));
          },
          true};
}

Setting replicaGroups() {
  return {"replica_group",
          [](const CompileSettings& settings, Lines& lines) {
            for (const auto& [parameter, grouping] : settings.options.training.groupedParameters) {
              lines.push_back(strCat("replica_group = {parameter=", text(parameter),
                                     ", size=", grouping.first, ", stride=", grouping.second, "}"));
            }
          },
          [](LineReader& in, CompileSettings& settings) {
            std::string parameter;
            std::pair<int64_t, int64_t> grouping{1, 1};
            readRecord(in, "replica_group", {"parameter", "size", "stride"},
                       [&](const std::string& name) {
                         if (name == "parameter")
                           read(in, parameter);
                         else if (name == "size")
                           read(in, grouping.first);
                         else if (name == "stride")
                           read(in, grouping.second);
                         else
                           return false;
                         return true;
                       });
            if (parameter.empty()) in.fail("a replica_group names its parameter=\"...\"");
            settings.options.training.groupedParameters[parameter] = grouping;
          },
          true};
}

// Every setting, in the order the header lists them.
const std::vector<Setting>& settingTable() {
  static const std::vector<Setting> table = {
      field(
          "program", [](auto& s) -> auto& { return s.options.program; }),
      field(
          "schedule", [](auto& s) -> auto& { return s.options.schedule; }),
      field(
          "recomputation", [](auto& s) -> auto& { return s.options.recomputation; }),
      field(
          "device_iterations", [](auto& s) -> auto& { return s.options.deviceIterations; }),
      field(
          "gradient_accumulation", [](auto& s) -> auto& { return s.options.gradientAccumulation; }),
      field(
          "output_mode", [](auto& s) -> auto& { return s.options.output.mode; }),
      field(
          "output_period", [](auto& s) -> auto& { return s.options.output.period; }),
      stages(),
      field(
          "optimizer", [](auto& s) -> auto& { return s.options.training.optimizer; }),
      groups(),
      field(
          "max_grad_norm", [](auto& s) -> auto& { return s.options.training.maxGradNorm; }),
      field(
          "gradient_scale", [](auto& s) -> auto& { return s.options.training.gradientScale; }),
      field(
          "running_mean", [](auto& s) -> auto& { return s.options.training.runningMean; }),
      field(
          "half_accumulators",
          [](auto& s) -> auto& { return s.options.training.halfAccumulators; }),
      field(
          "half_states", [](auto& s) -> auto& { return s.options.training.halfStates; }),
      field(
          "anchored_gradients",
          [](auto& s) -> auto& { return s.options.training.anchoredGradients; }),
      field(
          "replicas", [](auto& s) -> auto& { return s.options.training.replicas; }),
      field(
          "system_ipus", [](auto& s) -> auto& { return s.options.training.systemIpus; }),
      field(
          "sharded_parameters",
          [](auto& s) -> auto& { return s.options.training.shardedParameters; }),
      field(
          "sharded_weights", [](auto& s) -> auto& { return s.options.training.shardedWeights; }),
      replicaGroups(),
      field(
          "loss_scaling", [](auto& s) -> auto& { return s.options.training.lossScaling; }),
      field(
          "loss_scaling_state",
          [](auto& s) -> auto& { return s.options.training.lossScalingState; }),
      field(
          "automatic_loss_scaling",
          [](auto& s) -> auto& { return s.options.training.automaticLossScaling; }),
      field(
          "loss_scaling_bin_edge",
          [](auto& s) -> auto& { return s.options.training.lossScalingBinEdge; }),
      field(
          "loss_scaling_threshold",
          [](auto& s) -> auto& { return s.options.training.lossScalingThreshold; }),
      field(
          "ipu_version", [](auto& s) -> auto& { return s.system.chip; }),
      field(
          "ipus", [](auto& s) -> auto& { return s.system.numIpus; }),
      field(
          "memory_per_ipu", [](auto& s) -> auto& { return s.system.memoryPerIpu; }),
      field(
          "io_tiles", [](auto& s) -> auto& { return s.system.ioTiles; }),
      field(
          "replicas_per_host_thread",
          [](auto& s) -> auto& { return s.system.replicasPerHostThread; }),
      field(
          "disabled_passes", [](auto& s) -> auto& { return s.disabledPasses; }),
  };
  return table;
}

std::string_view trimmed(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const size_t last = line.find_last_not_of(" \t\r");
  return line.substr(first, last - first + 1);
}

// Reads one "key = value" into `settings`; `seen` holds the keys read so
// far (a setting that is not a record is set once).
void readSetting(LineReader& in, CompileSettings& settings, std::set<std::string>& seen) {
  const std::string key = in.word();
  const auto& table = settingTable();
  const auto setting = std::find_if(table.begin(), table.end(),
                                    [&](const Setting& each) { return each.key == key; });
  if (setting == table.end()) {
    std::vector<std::string> keys;
    for (const Setting& each : table)
      keys.push_back(each.key);
    in.fail(strCat("'", key, "' is not a setting (the settings: ", join(keys, ", "), ")"));
  }
  if (!setting->repeated && !seen.insert(key).second) in.fail(strCat("'", key, "' is set twice"));
  in.expect("=");
  setting->read(in, settings);
  if (!in.atEnd()) in.fail("unexpected text at the end of the setting");
}

// Reads the header's lines [first + 1, closing) into `settings`; returns the
// index of its closing "}".
size_t readHeader(const std::vector<std::string_view>& lines, size_t first,
                  CompileSettings& settings) {
  std::set<std::string> seen;
  for (size_t index = first + 1; index < lines.size(); ++index) {
    const std::string_view line = lines[index];
    if (ir::blankIrLine(line)) continue;
    if (trimmed(line) == "}") return index;
    if (trimmed(line).substr(0, 6) == "graph(") break;
    LineReader in(line, index + 1);
    readSetting(in, settings, seen);
  }
  throwError(ErrorKind::InvalidInput,
             strCat("IR text, line ", first + 1,
                    ": the options header is not closed: expected a line '}' before the graph."));
}

// The system settings as the compiler expects them (the options that set
// them check users' values; a hand-written header gets the same checks).
void checkSettings(const CompileSettings& settings, size_t headerLine) {
  const device::IpuSystemConfig& system = settings.system;
  const auto fail = [&](const std::string& problem) {
    throwError(ErrorKind::InvalidInput,
               strCat("IR text, line ", headerLine + 1, ": the options header's ", problem, "."));
  };
  if (system.ioTiles != 0 &&
      (system.ioTiles < 32 || system.ioTiles > 192 || system.ioTiles % 2 != 0)) {
    fail(strCat("io_tiles must be 0 or an even number from 32 to 192, got ", system.ioTiles));
  }
  if (system.replicasPerHostThread < 1) {
    fail(strCat("replicas_per_host_thread must be 1 or more, got ", system.replicasPerHostThread));
  }
  // Counts a program is built from, bounded so that no table sized by them
  // overflows (what popsim.Options checks for Python users, checked here for
  // IR text from elsewhere).
  const CompilerOptions& options = settings.options;
  const std::pair<const char*, int64_t> counts[] = {
      {"device_iterations", options.deviceIterations},
      {"gradient_accumulation", options.gradientAccumulation},
      {"replicas", options.training.replicas},
      {"system_ipus", options.training.systemIpus}};
  for (const auto& [name, value] : counts) {
    if (value < 1 || value > (int64_t{1} << 24)) {
      fail(strCat(name, " must be from 1 to 2^24, got ", value));
    }
  }
  try {
    system.validate();
  } catch (const CoreError& error) {
    fail(strCat("system settings do not hold: ", error.what()));
  }
}

} // namespace

CompileSettings settingsOf(const PassContext& context) {
  return {context.options(), context.system(), context.disabled()};
}

void applySetting(CompileSettings& settings, std::string_view setting, const std::string& place) {
  LineReader in(setting, place);
  std::set<std::string> seen;
  readSetting(in, settings, seen);
}

std::string printSettingsHeader(const CompileSettings& settings) {
  Lines lines;
  for (const Setting& setting : settingTable())
    setting.print(settings, lines);
  if (lines.empty()) return "";
  std::string header = "options {\n";
  for (const std::string& line : lines)
    header += "  " + line + "\n";
  return header + "}\n";
}

std::string printProgramText(const ir::Graph& graph, const CompileSettings& settings,
                             const ir::PrintOptions& print) {
  return printSettingsHeader(settings) + ir::printGraph(graph, print);
}

ProgramText parseProgramText(std::string_view text) {
  ProgramText program;
  const std::vector<std::string_view> lines = splitLines(text);
  size_t first = 0;
  while (first < lines.size() && ir::blankIrLine(lines[first]))
    ++first;
  if (first < lines.size() && trimmed(lines[first]) == "options {") {
    const size_t closing = readHeader(lines, first, program.settings);
    checkSettings(program.settings, first);
    // The graph's parser reads the rest, with the header's lines left blank
    // so that its errors name the lines of the file.
    std::string graphText(closing + 1, '\n');
    for (size_t index = closing + 1; index < lines.size(); ++index) {
      graphText.append(lines[index]);
      if (index + 1 < lines.size()) graphText += '\n';
    }
    program.graph = ir::parseGraph(graphText);
    return program;
  }
  program.graph = ir::parseGraph(text);
  return program;
}

} // namespace popsim::compiler
