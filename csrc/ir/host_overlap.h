#pragma once

#include <optional>
#include <string>

namespace popsim::ir {

// How a model input or output streams between the host and an IPU
// (PopTorch's OverlapMode, set with set_overlap_for_input / _output):
// - None: through the IPU's compute tiles, which stop computing meanwhile;
// - AccumulationLoop: through IO tiles, beside the compute, up to the edge of
//   the innermost loop (a training step's gradient accumulation; in
//   inference, the device iterations);
// - DeviceIterationLoop: through IO tiles across device iterations too, so
//   only a call's edges stop the overlap.
enum class HostOverlap { None, AccumulationLoop, DeviceIterationLoop };

// PopTorch's names: "no_overlap", "overlap_accumulation_loop",
// "overlap_device_iteration_loop".
const char* hostOverlapName(HostOverlap overlap);
std::optional<HostOverlap> parseHostOverlap(const std::string& name);

} // namespace popsim::ir
