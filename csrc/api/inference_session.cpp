// popsim::InferenceSession (include/popsim/session.h): Python's
// inferenceModel for a TorchScript module. Each submodule runs as its
// train/eval flag says when the session compiles, as LibTorch's forward()
// runs it: call module.eval() first for inference's behaviour.
#include "api/error_classes.h"
#include "api/session_state.h"
#include "common/error.h"

namespace popsim {

InferenceSession::InferenceSession(torch::jit::Module module, const Inputs& exampleInputs,
                                   Options options) {
  api::withErrorClasses([&] {
    if (options.Training.gradientAccumulation() != 1) {
      throwOptionError("Training.gradientAccumulation",
                       "Training.gradientAccumulation must be 1 for an inference session, got " +
                           std::to_string(options.Training.gradientAccumulation()) + ".");
    }
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
