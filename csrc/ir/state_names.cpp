#include "ir/state_names.h"

namespace popsim::ir {

const char* const kRandomCounterName = "random/counter";
const char* const kLossScalingName = "optimizer/loss_scaling";

std::string parameterStateName(const std::string& parameter, const std::string& state) {
  return parameter + "/" + state;
}

std::string groupStateName(size_t group, const std::string& state) {
  return "optimizer/group" + std::to_string(group) + "/" + state;
}

std::string replicaStateName(const std::string& name, int64_t ipu) {
  return name + "@ipu" + std::to_string(ipu);
}

bool isStateReplica(const std::string& name) { return name.find("@ipu") != std::string::npos; }

} // namespace popsim::ir
