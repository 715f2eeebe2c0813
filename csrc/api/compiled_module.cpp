#include "api/compiled_module.h"

#include "api/nested_tensors.h"

#include "common/check.h"
#include "common/logging.h"
#include "common/strings.h"
#include "frontend/dtype_conversion.h"
#include "frontend/host_call.h"
#include "frontend/import.h"
#include "frontend/tensor_conversion.h"
#include "host/batch_split.h"
#include "host/compile_options_builder.h"
#include "host/executable_cache.h"
#include "host/session_options.h"
#include "host/tensor_sharding.h"
#include "ir/state_names.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/serialization/import.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

namespace popsim::api {
namespace {

// The module's parameters and buffers by path, as Python's named_parameters()
// and named_buffers() name them.
std::map<std::string, at::Tensor> namedTensors(const torch::jit::Module& module) {
  std::map<std::string, at::Tensor> tensors;
  for (const torch::jit::NameTensor& parameter : module.named_parameters(true))
    tensors.emplace(parameter.name, parameter.value);
  for (const torch::jit::NameTensor& buffer : module.named_buffers(true))
    tensors.emplace(buffer.name, buffer.value);
  return tensors;
}

// The module's parameters as replicated tensor sharding chooses among them.
std::vector<host::ShardCandidate> shardCandidates(const torch::jit::Module& module) {
  std::vector<host::ShardCandidate> candidates;
  for (const torch::jit::NameTensor& parameter : module.named_parameters(true))
    candidates.push_back(
        {parameter.name, parameter.value.is_floating_point(), parameter.value.sizes().vec()});
  return candidates;
}

// forward()'s parameter names after `self`, for errors and the printed IR.
std::vector<std::string> parameterNames(const torch::jit::Module& module) {
  std::vector<std::string> names;
  const auto& arguments = module.get_method("forward").function().getSchema().arguments();
  for (size_t i = 1; i < arguments.size(); ++i)
    names.push_back(arguments[i].name());
  return names;
}

// One micro-batch of each example input, as the host splits a call's inputs
// (host/batch_split.h), with Python's messages.
std::vector<ir::TensorType> microBatchTypes(const std::vector<at::Tensor>& examples,
                                            const std::vector<std::string>& names,
                                            const host::SessionOptions& options) {
  const host::BatchSplit split = host::batchSplitOf(options);
  std::vector<ir::TensorType> types;
  for (size_t i = 0; i < examples.size(); ++i) {
    const std::string name = i < names.size() ? names[i] : "input" + std::to_string(i);
    if (!examples[i].defined()) {
      throwError(ErrorKind::InvalidInput, "Input '" + name + "' is an undefined tensor.");
    }
    ir::TensorType type = frontend::typeOf(examples[i], "input '" + name + "'");
    type.shape = split.microBatchShape(name, type.shape);
    types.push_back(type);
  }
  return types;
}

// A dtype as LibTorch's messages name it ("Float", "Long").
std::string dtypeName(c10::ScalarType type) { return c10::toString(type); }

// "[16, 1, 28, 28]", as LibTorch prints sizes.
std::string listText(c10::IntArrayRef sizes) { return listToString(sizes.vec()); }

} // namespace

CompiledModule::CompiledModule(torch::jit::Module module, const std::vector<c10::IValue>& examples,
                               Options options, bool training,
                               const compiler::TrainingConfig& config)
    : module_(std::move(module)), options_(std::move(options)), profile_(options_, training) {
  const auto start = std::chrono::steady_clock::now(); // compiling, tracing included
  frontend::ImportOptions import;
  import.training = training;
  const host::SessionOptions& session = options_.session();
  import.randomSeed = static_cast<int64_t>(options_.randomSeed());
  import.downcastMixedFloats = session.downcastsMixedFloats();
  import.moduleScopes = session.moduleNamescope;
  // The tensors inside the inputs, each a graph input of its own.
  parameterNames_ = parameterNames(module_);
  FlatInputs flat = flattenExamples(examples, parameterNames_);
  const std::vector<at::Tensor>& exampleInputs = flat.tensors;
  import.inputNames = flat.names;
  inputNames_ = flat.names;
  inputStructures_ = flat.structures;
  import.inputStructures = inputStructures_; // (checked against forward()'s types)
  for (const at::Tensor& example : exampleInputs)
    examples_.push_back(example.defined()
                            ? at::empty(example.sizes(), example.options().device(at::kMeta))
                            : at::Tensor());
  if (session.executionStrategy.has_value()) {
    // TorchScript modules carry no block markers: each stage's module starts a block.
    for (const host::StrategyStage& stage : session.executionStrategy->stages)
      import.moduleBlocks.push_back({stage.blocks.front(), stage.ipu.value_or(0)});
  }
  const std::vector<ir::TensorType> types =
      microBatchTypes(exampleInputs, import.inputNames, session);
  const std::unique_ptr<ir::Graph> graph =
      frontend::importModule(module_, types, import, &outputStructure_);
  // The anchors, checked against the module; anchored gradients become
  // outputs of the training program.
  const std::map<std::string, at::Tensor> tensors = namedTensors(module_);
  std::vector<std::string> weights;
  for (const auto& [name, tensor] : tensors)
    weights.push_back(name);
  for (const compiler::ParameterGroup& group : config.groups)
    trained_.insert(trained_.end(), group.parameters.begin(), group.parameters.end());
  lossScaling_ = config.lossScaling;
  anchors_ = host::planAnchors(session, training, trained_, weights);
  compiler::TrainingConfig anchored = config;
  const std::vector<host::ShardCandidate> candidates = shardCandidates(module_);
  host::shardParameters(session, training, candidates, anchored);
  for (const auto& [shortName, parameter] : anchors_.gradients) {
    anchored.anchoredGradients.push_back(parameter);
    anchorShapes_[parameter] = tensors.at(parameter).sizes().vec();
  }
  host::CompileInputs inputs;
  inputs.blocks = graph->blocks();
  inputs.training = training;
  inputs.config = anchored;
  inputs.randomSeed = options_.randomSeed();
  inputs.hostThreads = at::get_num_threads();
  // Compiled, or read from the executable cache (Python's cache and checks).
  host::ObtainedExecutable obtained = host::executableFor(
      *graph, host::buildCompileOptions(session, inputs), session.executableCache);
  for (const std::string& warning : obtained.warnings)
    POPSIM_LOG(Warn) << warning;
  std::shared_ptr<runtime::Executable> compiled = std::move(obtained.executable);
  // The job's replicas (one by default), each running the program on its own IPUs.
  const host::Replication replication = host::replicationOf(session, training);
  training_ = training;
  host::CallLayout layout = host::callLayoutOf(session, training, replication, *compiled);
  program_ = host::makeDeviceProgram(std::move(compiled), replication, std::move(layout));
  if (!program_->costOnly()) {
    program_->shardVariables(host::shardedVariables(anchored, candidates));
  }
  std::vector<std::tuple<std::string, std::string, std::string>> variables;
  for (const auto& [shortName, name] : anchors_.variables)
    variables.emplace_back(shortName, name, name);
  host::checkAnchoredVariablesHeld(variables, program_->weightNames());
  // The job as the sizing report sees it. Every call has the example
  // inputs' shapes, so its samples are the first input's dimension 0, as
  // Python counts them; the model is its class name ("Network").
  const auto type = module_.type()->name();
  sizingJob_.model = type ? type->name() : "Module";
  sizingJob_.replicas = replication.job();
  sizingJob_.stepsPerCall = options_.deviceIterations();
  sizingJob_.microBatchesPerStep = training ? options_.Training.gradientAccumulation() : 1;
  for (const at::Tensor& example : exampleInputs) {
    if (example.defined() && example.dim() > 0) {
      sizingJob_.itemsPerCall = example.size(0);
      break;
    }
  }
  std::vector<std::tuple<std::string, int64_t, int64_t>> assigned;
  for (const compiler::StageAssignment& stage : executable().options().compiler.stages) {
    assigned.emplace_back(stage.block, stage.stage, stage.ipu);
  }
  stages_ = profile::stageList(assigned);
  profile_.compiled(executable(), sizingJob_.model, stages_,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    replication.job());
  copyWeightsToDevice();
  if (replication.job() > 1) {
    program_->drawApart(0); // replicas draw random numbers of their own
  }
}

void CompiledModule::checkInputs(const std::vector<at::Tensor>& inputs) const {
  // (As many as the examples: flattenAs took them in the examples' structure.)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = inputNames_[i];
    const at::Tensor& expected = examples_[i];
    POPSIM_CHECK(inputs[i].defined(), ErrorKind::InvalidInput, "Input '", name,
                 "' is an undefined tensor.");
    if (inputs[i].scalar_type() != expected.scalar_type()) {
      throwError(ErrorKind::InvalidInput, "Data type mismatch for " + name + ": expected " +
                                              dtypeName(expected.scalar_type()) + " but got " +
                                              dtypeName(inputs[i].scalar_type()) + ". " +
                                              kOneProgramPerSignature);
    }
    if (inputs[i].sizes() != expected.sizes()) {
      std::string message = "Shape mismatch for " + name + ": expected " +
                            listText(expected.sizes()) + " but got " + listText(inputs[i].sizes()) +
                            ". ";
      if (inputs[i].dim() > 0 && expected.dim() > 0 &&
          inputs[i].sizes().slice(1) == expected.sizes().slice(1)) {
        // This input's own micro-batch: inputs may differ in dimension 0.
        const host::BatchSplit split = host::batchSplitOf(options_.session());
        message += "Input '" + name + "' has " + std::to_string(inputs[i].size(0)) +
                   " samples in dimension 0 but the model was compiled for " +
                   std::to_string(expected.size(0)) + " per call (" +
                   split.batchText(expected.size(0) / split.factor()) + "). Pass batches of " +
                   std::to_string(expected.size(0)) +
                   ", or build another session for another "
                   "batch size.";
      } else {
        message += kOneProgramPerSignature;
      }
      throwError(ErrorKind::InvalidInput, message);
    }
  }
}

std::vector<at::Tensor> CompiledModule::run(const std::vector<c10::IValue>& values) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<at::Tensor> inputs = flattenAs(values, inputStructures_, parameterNames_);
  checkInputs(inputs);
  frontend::HostCall call =
      frontend::prepareHostCall(program_->costOnly(), program_->outputTypes(), inputs);
  program_->run(call.inputViews, call.outputViews);
  if (training_ && options_.session().broadcastBuffers) {
    program_->broadcast(bufferNames()); // replica 0's buffers to the others
  }
  called_ = true;
  profile_.called(executable(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  sizingJob_);
  std::vector<at::Tensor> outputs = std::move(call.outputs);
  takeAnchors(outputs);
  return outputs;
}

c10::IValue CompiledModule::nested(const std::vector<at::Tensor>& outputs) const {
  return nest(outputStructure_, outputs);
}

void CompiledModule::takeAnchors(std::vector<at::Tensor>& outputs) {
  anchored_.clear();
  // Anchored gradients are the last outputs; several micro-batches' are
  // stacked along a new dimension 0.
  const size_t count = anchors_.gradients.size();
  for (size_t index = 0; index < count; ++index) {
    const auto& [shortName, parameter] = anchors_.gradients[index];
    const at::Tensor& value = outputs[outputs.size() - count + index];
    std::vector<int64_t> shape = anchorShapes_.at(parameter);
    const int64_t elements = c10::multiply_integers(shape);
    if (value.numel() != elements) shape.insert(shape.begin(), -1);
    anchored_[shortName] = value.reshape(shape);
  }
  outputs.resize(outputs.size() - count);
  if (anchors_.variables.empty()) return;
  // Anchored variables: their values after the call, read from the device;
  // a constant loss scaling is the optimizer's.
  const std::vector<std::string> states = program_->stateNames();
  const bool scaleHeld =
      std::find(states.begin(), states.end(), ir::kLossScalingName) != states.end();
  std::map<std::string, at::Tensor> values;
  std::map<std::string, runtime::TensorView> views;
  for (const auto& [shortName, name] : anchors_.variables) {
    if (name == ir::kLossScalingName && !scaleHeld) {
      values[name] = at::scalar_tensor(lossScaling_, at::kFloat);
      continue;
    }
    const ir::TensorType type = program_->variableType(name);
    at::Tensor& value = values[name] = frontend::emptyTensor(type);
    if (program_->costOnly()) {
      value = at::empty(value.sizes(), value.options().device(at::kMeta));
    } else {
      views[name] = frontend::viewOf(value, "'" + name + "'");
    }
  }
  if (!views.empty()) program_->readVariables(views);
  for (const auto& [shortName, name] : anchors_.variables)
    anchored_[shortName] = values.at(name);
}

at::Tensor CompiledModule::anchoredTensor(const std::string& shortName) const {
  const auto found = anchored_.find(shortName);
  if (found == anchored_.end()) host::refuseMissingAnchor(options_.session(), shortName);
  return found->second;
}

std::vector<std::string> CompiledModule::tensorNames() const {
  return host::anchorableNames(program_->weightNames(), training_, trained_);
}

SizingReport CompiledModule::sizingReport() const {
  POPSIM_CHECK(called_, ErrorKind::InvalidInput,
               "sizingReport() needs a call: the simulated clock times the last call. Run the "
               "session once (with Simulator.costOnly() it computes nothing).");
  return profile::sizingReport(executable(), sizingJob_, stages_);
}

void CompiledModule::copyWeightsToDevice() {
  const std::map<std::string, at::Tensor> host = namedTensors(module_);
  std::map<std::string, at::Tensor> held; // alive while the views are
  std::map<std::string, runtime::TensorView> views;
  for (const ir::Value* weight : executable().weights()) {
    auto found = host.find(weight->name());
    POPSIM_CHECK(found != host.end(), ErrorKind::InvalidInput,
                 "the module has no parameter or buffer '", weight->name(),
                 "', which the compiled program reads; did the module change after the "
                 "session compiled it?");
    // In the dtype the device holds it (float64 parameters compute in float32).
    const at::Tensor& value = held[weight->name()] =
        found->second.detach().to(frontend::toTorchDType(weight->type().dtype)).contiguous();
    views[weight->name()] = frontend::viewOf(value, "'" + weight->name() + "'");
  }
  program_->writeVariables(views); // every replica's (a cost-only device drops them)
}

void CompiledModule::copyWeightsToHost() {
  if (program_->costOnly()) {
    return; // the device holds no values
  }
  const std::map<std::string, at::Tensor> host = namedTensors(module_);
  std::map<std::string, at::Tensor> device;
  std::map<std::string, runtime::TensorView> views;
  for (const ir::Value* weight : executable().weights()) {
    POPSIM_CHECK(host.count(weight->name()) != 0, ErrorKind::InvalidInput,
                 "the module has no parameter or buffer '", weight->name(),
                 "' to copy the device's value into; did the module change after the session "
                 "compiled it?");
    // (Its whole type: a sharded weight's shards come home joined.)
    const at::Tensor& tensor = device[weight->name()] =
        frontend::emptyTensor(program_->variableType(weight->name()));
    views[weight->name()] = frontend::viewOf(tensor, "'" + weight->name() + "'");
  }
  program_->readVariables(views); // replica 0's: training keeps the replicas' weights equal
  at::NoGradGuard noGrad;
  for (const auto& [name, value] : device)
    host.at(name).copy_(value);
}

std::vector<std::string> CompiledModule::bufferNames() const {
  std::vector<std::string> names;
  std::set<std::string> buffers;
  for (const torch::jit::NameTensor& buffer : module_.named_buffers(true))
    buffers.insert(buffer.name);
  for (const ir::Value* weight : executable().weights()) {
    if (buffers.count(weight->name()) != 0) names.push_back(weight->name());
  }
  return names;
}

std::vector<std::string> CompiledModule::weightNames() const {
  std::vector<std::string> names;
  for (const ir::Value* weight : executable().weights())
    names.push_back(weight->name());
  return names;
}

int64_t CompiledModule::combinedBatchSize() const {
  for (const at::Tensor& example : examples_)
    if (example.dim() > 0) return example.size(0);
  throwError(ErrorKind::InvalidInput,
             "combinedBatchSize: the session's inputs have no dimension 0 to batch along.");
}

torch::jit::Module loadModule(const std::string& path) {
  try {
    return torch::jit::load(path);
  } catch (const c10::Error& error) {
    // Not an InputError (a call's tensors): the model cannot be compiled.
    throwError(ErrorKind::Compilation,
               "cannot load a TorchScript module from '" + path +
                   "' (write it with torch.jit.save): " + error.what_without_backtrace());
  }
}

} // namespace popsim::api
