// popsim::InferenceSession (include/popsim/session.h): Python's
// inferenceModel for a TorchScript module.
#include "api/error_classes.h"
#include "api/session_state.h"
#include "common/error.h"

namespace popsim {
namespace {

// Compiles in eval mode and leaves the module's flags as the caller set them,
// as Python's inferenceModel does (a jit::Module is a handle on the caller's
// object): each submodule's flag is restored, also when compiling fails.
class EvalModeWhileCompiling {
public:
  explicit EvalModeWhileCompiling(torch::jit::Module& module) {
    for (const torch::jit::NameModule& named : module.named_modules()) {
      torch::jit::Module submodule = named.value; // a handle on the caller's object
      if (submodule.hasattr("training")) {
        flags_.emplace_back(submodule, submodule.is_training());
        submodule.setattr("training", false); // dropout off, batch norm's running statistics
      }
    }
  }
  ~EvalModeWhileCompiling() {
    for (auto& [module, training] : flags_)
      module.setattr("training", training);
  }
  EvalModeWhileCompiling(const EvalModeWhileCompiling&) = delete;
  EvalModeWhileCompiling& operator=(const EvalModeWhileCompiling&) = delete;

private:
  std::vector<std::pair<torch::jit::Module, bool>> flags_;
};

} // namespace

InferenceSession::InferenceSession(torch::jit::Module module, const Inputs& exampleInputs,
                                   Options options) {
  api::withErrorClasses([&] {
    if (options.Training.gradientAccumulation() != 1) {
      throwOptionError("Training.gradientAccumulation",
                       "Training.gradientAccumulation must be 1 for an inference session, got " +
                           std::to_string(options.Training.gradientAccumulation()) + ".");
    }
    EvalModeWhileCompiling evalMode(module);
    state_->compiled = std::make_unique<api::CompiledModule>(
        std::move(module), exampleInputs.values(), std::move(options), false);
    return 0;
  });
}

InferenceSession::InferenceSession(const std::string& path, const Inputs& exampleInputs,
                                   Options options)
    : InferenceSession(api::withErrorClasses([&] { return api::loadModule(path); }), exampleInputs,
                       std::move(options)) {}

std::vector<at::Tensor> InferenceSession::run(const Inputs& inputs) {
  return api::withErrorClasses([&] { return state().compiled->run(inputs.values()); });
}

} // namespace popsim
