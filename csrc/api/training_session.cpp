// popsim::TrainingSession (include/popsim/session.h): Python's trainingModel
// for a TorchScript module, over api::CompiledModule. The optimizer becomes
// the program's TrainingConfig (its kind and the flags that decide which
// state exists, as _training.OptimizerBinding.config builds it) and device
// state: zeroed optimizer state and accumulators, and the numeric
// hyper-parameters, which setOptimizer rewrites without recompiling.
#include "api/error_classes.h"
#include "api/optimizer_kind.h"
#include "api/session_state.h"
#include "common/check.h"
#include "common/strings.h"
#include "frontend/dtype_conversion.h"
#include "frontend/tensor_conversion.h"
#include "host/compile_options_builder.h"
#include "host/optimizer_hyperparameters.h"
#include "ir/state_names.h"
#include "runtime/hyperparameters.h"

#include <ATen/ATen.h>

namespace popsim {
namespace {

compiler::TrainingConfig configOf(const Options& options,
                                  const std::vector<api::OptimizerGroup>& groups) {
  const Optimizer& first = groups.front().optimizer; // (every group's is of its kind)
  compiler::TrainingConfig config;
  config.optimizer = api::compilerKindOf(first.kind());
  config.maxGradNorm = first.maxGradNorm();
  config.lossScaling = first.lossScaling(); // compiled in, unless device state:
  config.lossScalingState = first.lossScalingIsVariable();
  config.halfAccumulators = first.halfAccumulators();
  config.halfStates = first.halfStateKeys();
  for (const api::OptimizerGroup& optimized : groups) {
    compiler::ParameterGroup group;
    group.parameters = optimized.parameters;
    group.hasMomentum = optimized.optimizer.momentum();
    group.nesterov = optimized.optimizer.nesterov();
    group.amsgrad = optimized.optimizer.amsgrad();
    group.centered = optimized.optimizer.centered();
    group.tfVariant = optimized.optimizer.tfVariant();
    group.biasCorrection = optimized.optimizer.biasCorrection();
    config.groups.push_back(group);
  }
  host::applySessionTraining(options.session(), config); // reductions, as Python's
  return config;
}

// The optimizer state that does not start at zero (where device memory
// starts), as the compiler says it starts (TensorFlow's RMSprop's square
// averages), on every replica.
void writeInitialOptimizerState(api::CompiledModule& compiled,
                                const compiler::TrainingConfig& config) {
  runtime::Executable& executable = compiled.executable();
  std::map<std::string, at::Tensor> values;
  std::map<std::string, runtime::TensorView> views;
  for (const compiler::ParameterGroup& group : config.groups) {
    for (const std::string& parameter : group.parameters) {
      for (const std::string& key : compiler::parameterStateKeys(config.optimizer, group)) {
        const double start = compiler::initialStateValue(group, key);
        const std::string name = ir::parameterStateName(parameter, key);
        const ir::Value* state = executable.graph().findState(name);
        if (start == 0.0 || state == nullptr) continue;
        // Its whole type: replicas keep shards of a sharded state.
        const ir::TensorType type = compiled.program().variableType(name);
        const at::Tensor& value = values[name] = at::full(
            type.shape, start, at::TensorOptions().dtype(frontend::toTorchDType(type.dtype)));
        views[name] = frontend::viewOf(value, "'" + name + "'");
      }
    }
  }
  compiled.program().writeVariables(views); // a cost-only device drops them
}

// Writes each group's hyper-parameters and the loss scaling into the device
// state, every replica's.
void writeHyperparameters(api::CompiledModule& compiled,
                          const std::vector<api::OptimizerGroup>& groups) {
  std::vector<std::map<std::string, double>> hyperparameters;
  for (const api::OptimizerGroup& group : groups)
    hyperparameters.push_back(group.optimizer.hyperparameters());
  host::writeOptimizerHyperparameters(compiled.program(), std::move(hyperparameters),
                                      host::gradientScale(compiled.options().session()),
                                      groups.front().optimizer.lossScaling());
}

// Whether `next` may replace `current` without recompiling: the same
// optimizer and state flags, clipping, and loss scaling (its value only when
// compiled in).
bool sameProgram(const Optimizer& next, const Optimizer& current) {
  return api::stateSettingsOf(next) == api::stateSettingsOf(current) &&
         next.maxGradNorm() == current.maxGradNorm() &&
         next.lossScalingIsVariable() == current.lossScalingIsVariable() &&
         (next.lossScalingIsVariable() || next.lossScaling() == current.lossScaling());
}

} // namespace

namespace {

// `module` compiled to train `groups`, with their starting optimizer state and
// hyper-parameters on the device.
std::unique_ptr<api::CompiledModule>
compileTraining(torch::jit::Module module, const Inputs& exampleInputs, Options options,
                const std::vector<api::OptimizerGroup>& groups) {
  const compiler::TrainingConfig config = configOf(options, groups);
  auto compiled = std::make_unique<api::CompiledModule>(std::move(module), exampleInputs.values(),
                                                        std::move(options), true, config);
  // Device memory starts zeroed (runtime/device_memory.cpp): the optimizer
  // state, accumulators and counters of a fresh start, but for the state
  // that starts elsewhere.
  writeInitialOptimizerState(*compiled, config);
  writeHyperparameters(*compiled, groups);
  return compiled;
}

} // namespace

TrainingSession::TrainingSession(torch::jit::Module module, const Inputs& exampleInputs,
                                 Options options, Optimizer optimizer) {
  api::withErrorClasses([&] {
    std::vector<api::OptimizerGroup> groups{
        {std::move(optimizer), api::trainedParametersOf(module).names}};
    state_->compiled =
        compileTraining(std::move(module), exampleInputs, std::move(options), groups);
    state_->optimizerGroups = std::move(groups);
    return 0;
  });
}

TrainingSession::TrainingSession(torch::jit::Module module, const Inputs& exampleInputs,
                                 Options options, const torch::optim::Optimizer& optimizer) {
  api::withErrorClasses([&] {
    std::vector<api::OptimizerGroup> groups = api::optimizerGroupsOf(module, optimizer);
    state_->compiled =
        compileTraining(std::move(module), exampleInputs, std::move(options), groups);
    state_->optimizerGroups = std::move(groups);
    return 0;
  });
}

TrainingSession::TrainingSession(const std::string& path, const Inputs& exampleInputs,
                                 Options options, Optimizer optimizer)
    : TrainingSession(api::withErrorClasses([&] { return api::loadModule(path); }), exampleInputs,
                      std::move(options), std::move(optimizer)) {}

std::vector<at::Tensor> TrainingSession::run(const Inputs& inputs) {
  return api::withErrorClasses([&] { return state().compiled->run(inputs.values()); });
}

namespace {

const char* const kCompiledIn =
    "setOptimizer can change numeric hyper-parameters (lr, momentum values, betas, eps, "
    "weight_decay, ...) but not the optimizer, the settings that decide the optimizer state "
    "(momentum on or off, nesterov, amsgrad, centered, the TensorFlow variant, bias "
    "correction, the state's dtypes), maxGradNorm, a lossScaling compiled in (not "
    "variableLossScaling()) or the "
    "parameter groups: they are compiled into the program. Build another session for those.";

// Gives the session's groups the optimizers of `next`, which must train the
// same parameters in the same groups with the same program.
void replaceOptimizers(std::vector<api::OptimizerGroup>& groups,
                       const std::vector<api::OptimizerGroup>& next,
                       api::CompiledModule& compiled) {
  bool same = next.size() == groups.size();
  for (size_t index = 0; same && index < groups.size(); ++index) {
    same = next[index].parameters == groups[index].parameters &&
           sameProgram(next[index].optimizer, groups[index].optimizer);
  }
  if (!same) throwOptionError("setOptimizer", kCompiledIn);
  groups = next;
  writeHyperparameters(compiled, groups);
}

} // namespace

void TrainingSession::setOptimizer(const Optimizer& optimizer) {
  api::withErrorClasses([&] {
    std::vector<api::OptimizerGroup> next = state().optimizerGroups;
    for (api::OptimizerGroup& group : next)
      group.optimizer = optimizer; // (every group takes its options)
    replaceOptimizers(state().optimizerGroups, next, *state().compiled);
    return 0;
  });
}

void TrainingSession::setOptimizer(const torch::optim::Optimizer& optimizer) {
  api::withErrorClasses([&] {
    replaceOptimizers(state().optimizerGroups,
                      api::optimizerGroupsOf(state().compiled->module(), optimizer),
                      *state().compiled);
    return 0;
  });
}

} // namespace popsim
