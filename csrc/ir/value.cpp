#include "ir/value.h"

namespace popsim::ir {

const char* valueRoleName(ValueRole role) {
  switch (role) {
  case ValueRole::Input: return "input";
  case ValueRole::Weight: return "weight";
  case ValueRole::State: return "state";
  case ValueRole::Constant: return "constant";
  case ValueRole::Computed: return "computed";
  }
  return "?";
}

const char* stateKindName(StateKind kind) {
  switch (kind) {
  case StateKind::Accumulator: return "accumulator";
  case StateKind::Optimizer: return "optimizer";
  case StateKind::Random: return "random";
  }
  return "?";
}

} // namespace popsim::ir
