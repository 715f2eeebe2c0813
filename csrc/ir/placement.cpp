#include "ir/placement.h"

#include "ir/node.h"
#include "ir/value.h"

namespace popsim::ir {

const char* phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward: return "forward";
  case Phase::Backward: return "backward";
  case Phase::GradientNorm: return "gradient_norm";
  case Phase::Update: return "update";
  }
  return "?";
}

int64_t homeIpu(const Value& value) {
  if (value.producer() != nullptr) return value.producer()->placement().ipu;
  for (const Node* user : value.users()) {
    if (user->kind() != OpKind::IpuCopy) return user->placement().ipu;
  }
  return value.users().empty() ? 0 : value.users().front()->placement().ipu;
}

} // namespace popsim::ir
