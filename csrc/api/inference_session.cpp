// popsim::InferenceSession (include/popsim/session.h): Python's
// inferenceModel for a TorchScript module.
#include "api/error_classes.h"
#include "api/session_state.h"
#include "common/error.h"

namespace popsim {

InferenceSession::InferenceSession(torch::jit::Module module,
                                   const std::vector<at::Tensor>& exampleInputs, Options options) {
  api::withErrorClasses([&] {
    if (options.Training.gradientAccumulation() != 1) {
      throwError(ErrorKind::InvalidOption,
                 "Training.gradientAccumulation must be 1 for an inference session, got " +
                     std::to_string(options.Training.gradientAccumulation()) + ".");
    }
    module.eval(); // dropout off, batch norm with running statistics
    state_->compiled = std::make_unique<api::CompiledModule>(std::move(module), exampleInputs,
                                                             std::move(options), false);
    return 0;
  });
}

InferenceSession::InferenceSession(const std::string& path,
                                   const std::vector<at::Tensor>& exampleInputs, Options options)
    : InferenceSession(api::withErrorClasses([&] { return api::loadModule(path); }), exampleInputs,
                       std::move(options)) {}

std::vector<at::Tensor> InferenceSession::run(const std::vector<at::Tensor>& inputs) {
  return api::withErrorClasses([&] { return state_->compiled->run(inputs); });
}

} // namespace popsim
