#pragma once

#include <cstdint>
#include <string>

// Names of the state programs keep on the device, shared by the passes that
// create it, the frontend and the host (which reads and writes it by name).
namespace popsim::ir {

// The i64 counter that seeds dropout masks, advanced once per micro-batch.
extern const char* const kRandomCounterName;
// The f32 loss scaling factor, when the host may change it (loss_scaling).
extern const char* const kLossScalingName;

// Per parameter: "<param>/<state>" with PyTorch's optimizer state names
// (exp_avg, momentum_buffer, ...) and "<param>/accumulator".
std::string parameterStateName(const std::string& parameter, const std::string& state);

// Per optimizer parameter group: "optimizer/group<g>/<state>" (hyper, step).
std::string groupStateName(size_t group, const std::string& state);

// State every IPU needs its own copy of (hyper-parameters, step counts, the
// dropout counter) is named "<name>" on its first IPU and "<name>@ipu<k>"
// on the others; the host writes all copies and reads the first.
std::string replicaStateName(const std::string& name, int64_t ipu);
bool isStateReplica(const std::string& name);

} // namespace popsim::ir
