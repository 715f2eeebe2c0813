#include "ir/value.h"

namespace popsim::ir {

const char* valueRoleName(ValueRole role) {
  switch (role) {
  case ValueRole::Input: return "input";
  case ValueRole::Weight: return "weight";
  case ValueRole::Constant: return "constant";
  case ValueRole::Computed: return "computed";
  }
  return "?";
}

} // namespace popsim::ir
