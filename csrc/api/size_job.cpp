// popsim::sizeJob (include/popsim/session.h): Python's popsim.sizeJob for a
// TorchScript module, over a cost-only session.
#include "api/error_classes.h"
#include "common/error.h"
#include "host/batch_split.h"
#include "popsim/session.h"

#include <ATen/ATen.h>

#include <optional>

namespace popsim {
namespace {

// The call's inputs: each stands for `repeats` micro-batches like `tensor`, a
// stride-0 view of one element, since a cost-only call never reads it.
std::vector<at::Tensor> callInputs(const std::vector<at::Tensor>& microBatch, int64_t repeats) {
  std::vector<at::Tensor> inputs;
  for (size_t index = 0; index < microBatch.size(); ++index) {
    const at::Tensor& tensor = microBatch[index];
    if (tensor.defined() && tensor.dim() == 0) {
      throwError(ErrorKind::InvalidInput,
                 "sizeJob: input " + std::to_string(index) +
                     " (Tensor) is a scalar; every input of a micro-batch needs its batch "
                     "dimension first, as the model's inputs are split along it.");
    }
    if (!tensor.defined()) {
      inputs.push_back(tensor);
      continue;
    }
    std::vector<int64_t> shape = tensor.sizes().vec();
    shape[0] *= repeats;
    inputs.push_back(at::zeros({}, tensor.options()).expand(shape));
  }
  return inputs;
}

SizingReport sized(torch::jit::Module module, const std::vector<at::Tensor>& microBatch,
                   Options options, std::optional<Optimizer> optimizer) {
  options.Simulator.costOnly().allowOverCapacity();
  const bool training = optimizer.has_value();
  const std::vector<at::Tensor> call = api::withErrorClasses([&] {
    return callInputs(microBatch, host::microBatchesOfACall(options.session(), training));
  });
  if (training) {
    TrainingSession session(std::move(module), call, std::move(options), std::move(*optimizer));
    session.run(call);
    return session.sizingReport();
  }
  InferenceSession session(std::move(module), call, std::move(options));
  session.run(call);
  return session.sizingReport();
}

} // namespace

SizingReport sizeJob(torch::jit::Module module, const std::vector<at::Tensor>& microBatch,
                     Options options) {
  return sized(std::move(module), microBatch, std::move(options), std::nullopt);
}

SizingReport sizeJob(torch::jit::Module module, const std::vector<at::Tensor>& microBatch,
                     Options options, Optimizer optimizer) {
  return sized(std::move(module), microBatch, std::move(options), std::move(optimizer));
}

} // namespace popsim
