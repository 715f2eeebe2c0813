#include "ir/state_names.h"

namespace popsim::ir {

const char* const kRandomCounterName = "random/counter";

std::string parameterStateName(const std::string& parameter, const std::string& state) {
  return parameter + "/" + state;
}

std::string groupStateName(size_t group, const std::string& state) {
  return "optimizer/group" + std::to_string(group) + "/" + state;
}

} // namespace popsim::ir
