#include "host/program_key.h"

#include "common/sha256.h"
#include "common/strings.h"
#include "ir/serialization.h"

#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

namespace popsim::host {
namespace {

using nlohmann::json;

// Enums as Python's bindings print them ("OptimizerKind.Sgd"), so that a
// mismatch reads as Python's options do.
std::string enumText(const char* type, const char* value) { return strCat(type, ".", value); }

const char* programKindName(compiler::ProgramKind kind) {
  switch (kind) {
  case compiler::ProgramKind::Inference: return "Inference";
  case compiler::ProgramKind::Training: return "Training";
  case compiler::ProgramKind::Gradients: return "Gradients";
  }
  return "?";
}

const char* optimizerKindName(compiler::OptimizerKind kind) {
  switch (kind) {
  case compiler::OptimizerKind::Sgd: return "Sgd";
  case compiler::OptimizerKind::Adam: return "Adam";
  case compiler::OptimizerKind::AdamW: return "AdamW";
  case compiler::OptimizerKind::Rmsprop: return "Rmsprop";
  case compiler::OptimizerKind::Lamb: return "Lamb";
  }
  return "?";
}

json locationJson(const memory::TensorLocation& location) {
  return {{"on_chip", location.onChip},
          {"min_elements_for_off_chip", location.minElementsForOffChip},
          {"io_tiles_to_load", location.ioTilesToLoad},
          {"io_tiles_to_store", location.ioTilesToStore}};
}

json trainingJson(const compiler::TrainingConfig& training) {
  json groups = json::array();
  for (const compiler::ParameterGroup& group : training.groups) {
    groups.push_back({{"parameters", group.parameters},
                      {"has_momentum", group.hasMomentum},
                      {"nesterov", group.nesterov},
                      {"amsgrad", group.amsgrad},
                      {"centered", group.centered},
                      {"maximize", group.maximize},
                      {"bias_correction", group.biasCorrection},
                      {"use_tf_variant", group.tfVariant}});
  }
  json grouped = json::array(); // [name, [group size, group kind]] by name
  for (const auto& [name, grouping] : training.groupedParameters)
    grouped.push_back(json::array({name, json::array({grouping.first, grouping.second})}));
  return {{"optimizer", enumText("OptimizerKind", optimizerKindName(training.optimizer))},
          {"groups", groups},
          {"max_grad_norm", training.maxGradNorm},
          {"gradient_scale", training.gradientScale},
          {"running_mean", training.runningMean},
          {"half_accumulators", training.halfAccumulators},
          {"half_states", training.halfStates},
          {"anchored_gradients", training.anchoredGradients},
          {"replicas", training.replicas},
          {"system_ipus", training.systemIpus},
          {"sharded_parameters", training.shardedParameters},
          {"sharded_weights", training.shardedWeights},
          {"grouped_parameters", grouped},
          {"loss_scaling", training.lossScaling},
          {"loss_scaling_state", training.lossScalingState},
          {"automatic_loss_scaling", training.automaticLossScaling},
          {"loss_scaling_bin_edge", training.lossScalingBinEdge},
          {"loss_scaling_threshold", training.lossScalingThreshold}};
}

// Python's repr of a JSON value, as the option mismatch quotes it.
std::string pythonRepr(const json& value) {
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_string()) return strCat("'", value.get<std::string>(), "'");
  if (value.is_array()) {
    std::string text = "[";
    for (size_t i = 0; i < value.size(); ++i)
      text += (i ? ", " : "") + pythonRepr(value[i]);
    return text + "]";
  }
  if (value.is_object()) {
    std::string text = "{";
    bool first = true;
    for (const auto& [name, item] : value.items()) {
      text += strCat(first ? "" : ", ", "'", name, "': ", pythonRepr(item));
      first = false;
    }
    return text + "}";
  }
  return value.dump();
}

// "compiler.training.optimizer" -> value; lists are values of their own.
void flatten(const std::string& prefix, const json& value, std::map<std::string, json>& out) {
  if (!value.is_object()) {
    out[prefix] = value;
    return;
  }
  for (const auto& [name, item] : value.items())
    flatten(prefix.empty() ? name : strCat(prefix, ".", name), item, out);
}

std::string libraryDigest() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&libraryDigest), &info) == 0 || info.dli_fname == nullptr) {
    return "unknown";
  }
  std::ifstream library(info.dli_fname, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(library)),
                          std::istreambuf_iterator<char>());
  // An unreadable library gives no digest to compare: no program file then
  // matches this build, so nothing stale is ever run.
  if (!library.good() && !library.eof()) return "unreadable";
  return sha256Hex(bytes).substr(0, 16);
}

} // namespace

std::string ProgramKey::digest() const { return sha256Hex(json::array({graph, options}).dump()); }

json compileOptionsFingerprint(const runtime::CompileOptions& options) {
  json stages = json::array();
  for (const compiler::StageAssignment& stage : options.compiler.stages)
    stages.push_back({{"block", stage.block}, {"stage", stage.stage}, {"ipu", stage.ipu}});
  json proportions = json::array(); // [ipu, proportion] by IPU
  for (const auto& [ipu, proportion] : options.memory.availableMemoryProportion)
    proportions.push_back(json::array({ipu, proportion}));
  const compiler::CompilerOptions& compiler = options.compiler;
  return {{"system",
           {{"chip", enumText("ChipVersion", device::chipVersionName(options.system.chip))},
            {"num_ipus", options.system.numIpus},
            {"memory_per_ipu", options.system.memoryPerIpu},
            {"io_tiles", options.system.ioTiles},
            {"clock_hz", options.system.spec().clockHz}}},
          {"compiler",
           {{"program", enumText("ProgramKind", programKindName(compiler.program))},
            {"training", trainingJson(compiler.training)},
            {"stages", stages},
            {"schedule", enumText("ScheduleKind", compiler::scheduleName(compiler.schedule))},
            {"recomputation", compiler.recomputation},
            {"device_iterations", compiler.deviceIterations},
            {"gradient_accumulation", compiler.gradientAccumulation},
            {"output_mode", enumText("OutputMode", compiler::outputModeName(compiler.output.mode))},
            {"output_return_period", compiler.output.period}}},
          {"memory",
           {{"weight_location", locationJson(options.memory.weights)},
            {"optimizer_location", locationJson(options.memory.optimizerState)},
            {"accumulator_location", locationJson(options.memory.accumulators)},
            {"activation_location", locationJson(options.memory.activations)},
            {"available_memory_proportion", proportions},
            {"prefetch_depth", options.memory.prefetchDepth},
            {"half_partials", options.memory.halfPartials}}},
          {"clock",
           {{"synthetic_data", options.clock.syntheticData},
            {"host_exchanges_stall_every_ipu", options.clock.hostExchangesStallEveryIpu}}},
          {"kernels",
           {{"threads_per_ipu", options.kernels.threadsPerIpu},
            {"stochastic_rounding", options.kernels.stochasticRounding},
            {"stochastic_rounding_seed", options.kernels.stochasticRoundingSeed},
            {"floating_point_exceptions", options.kernels.floatingPointExceptions},
            {"cost_only", options.kernels.costOnly}}},
          {"allow_over_capacity", options.allowOverCapacity}};
}

const std::string& buildId() {
  static const std::string id = strCat(POPSIM_BUILD_VERSION, "+", libraryDigest());
  return id;
}

ProgramKey programKey(const ir::Graph& graph, const runtime::CompileOptions& options) {
  return {sha256Hex(ir::serializeGraph(graph, /*withStacks=*/false)),
          compileOptionsFingerprint(options), buildId()};
}

std::optional<std::string> keyMismatch(const ProgramKey& stored, const ProgramKey& current) {
  if (stored.build != current.build) {
    return strCat("it was written by popsim ", stored.build, "; this is popsim ", current.build,
                  ", whose compiler may build another program");
  }
  std::vector<std::string> differences;
  if (stored.graph != current.graph)
    differences.emplace_back("the traced model (its ops, shapes, constants or source lines)");
  std::map<std::string, json> before;
  std::map<std::string, json> now;
  flatten("", stored.options, before);
  flatten("", current.options, now);
  std::set<std::string> names;
  for (const auto& [name, value] : before)
    names.insert(name);
  for (const auto& [name, value] : now)
    names.insert(name);
  for (const std::string& name : names) {
    const json missing;
    const json& was = before.count(name) ? before.at(name) : missing;
    const json& is = now.count(name) ? now.at(name) : missing;
    if (was != is) {
      differences.push_back(
          strCat("option ", name, ": ", pythonRepr(was), " in the file, ", pythonRepr(is), " now"));
    }
  }
  if (differences.empty()) return std::nullopt;
  return "it was compiled for another program: " + join(differences, "; ");
}

} // namespace popsim::host
