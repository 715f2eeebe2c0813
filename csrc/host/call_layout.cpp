#include "host/call_layout.h"

#include "common/check.h"
#include "common/logging.h"
#include "runtime/executable.h"

#include <algorithm>
#include <cstring>

namespace popsim::host {

int64_t CallLayout::inputParts() const {
  return 1 + *std::max_element(inputPartOf.begin(), inputPartOf.end());
}

ir::TensorType CallLayout::replicaInputType(const ir::TensorType& callInput) const {
  if (callInput.shape.empty()) return callInput; // every replica gets the scalar
  ir::TensorType share = callInput;
  share.shape[0] /= inputParts();
  return share;
}

ir::TensorType CallLayout::callOutputType(const ir::TensorType& replicaOutput) const {
  ir::TensorType whole = replicaOutput;
  if (whole.shape.empty()) {
    whole.shape = {replicas()};
  } else {
    whole.shape[0] *= replicas();
  }
  return whole;
}

void CallLayout::copyReplicaInput(const runtime::TensorView& callInput, int64_t replica,
                                  void* destination) const {
  const auto* source = static_cast<const std::byte*>(callInput.data);
  auto* target = static_cast<std::byte*>(destination);
  if (callInput.shape.empty()) {
    std::memcpy(target, source, callInput.bytes());
    return;
  }
  // dimension 0: steps x parts x micro-batch rows
  const int64_t parts = inputParts();
  POPSIM_ASSERT(callInput.shape[0] % (steps * parts) == 0, "input rows ", callInput.shape[0],
                " do not split into ", steps, " steps of ", parts, " parts");
  const size_t chunk = callInput.bytes() / static_cast<size_t>(steps * parts);
  const auto part = static_cast<size_t>(inputPartOf.at(static_cast<size_t>(replica)));
  for (size_t step = 0; step < static_cast<size_t>(steps); ++step) {
    std::memcpy(target + step * chunk, source + (step * static_cast<size_t>(parts) + part) * chunk,
                chunk);
  }
}

void CallLayout::copyReplicaOutput(size_t output, const void* source,
                                   const ir::TensorType& replicaType, int64_t replica,
                                   const runtime::TensorView& callOutput) const {
  const size_t bytes = replicaType.numel() > 0 ? static_cast<size_t>(replicaType.numel()) *
                                                     ir::elementSize(replicaType.dtype)
                                               : 0;
  if (bytes == 0) return;
  auto* target = static_cast<std::byte*>(callOutput.data);
  const auto* from = static_cast<const std::byte*>(source);
  // For each returned slot, every replica's part in replica order.
  const int64_t slots = replicaType.shape.empty() ? 1 : outputSlots.at(output);
  const size_t chunk = bytes / static_cast<size_t>(slots);
  const auto count = static_cast<size_t>(replicas());
  for (size_t slot = 0; slot < static_cast<size_t>(slots); ++slot) {
    std::memcpy(target + (slot * count + static_cast<size_t>(replica)) * chunk, from + slot * chunk,
                chunk);
  }
}

CallLayout callLayoutOf(const SessionOptions& options, bool training,
                        const Replication& replication, const runtime::Executable& executable) {
  CallLayout layout;
  layout.steps = options.microBatchesPerCall();
  layout.inputPartOf = replication.inputPartOf;
  const OutputMode mode = options.resolvedOutputMode(training);
  const size_t outputs = executable.outputHostTypes().size();
  const size_t modelOutputs = outputs - executable.graph().inputUpdates().size();
  for (size_t index = 0; index < outputs; ++index) {
    if (index >= modelOutputs || mode == OutputMode::All) { // input updates: every micro-batch
      layout.outputSlots.push_back(layout.steps);
    } else if (mode == OutputMode::EveryN) {
      layout.outputSlots.push_back(layout.steps / options.outputReturnPeriod);
    } else {
      layout.outputSlots.push_back(1);
    }
    if (index < modelOutputs && mode == OutputMode::Sum &&
        executable.outputHostTypes()[index].dtype == ir::DType::Bool) {
      POPSIM_LOG(Warn) << "OutputMode.Sum: output " << index
                       << " is a bool tensor, which cannot hold a count, so the call returns "
                          "whether any micro-batch's value was True. Return it as .int() or "
                          ".long() to count the True values.";
    }
  }
  return layout;
}

} // namespace popsim::host
