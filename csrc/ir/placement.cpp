#include "ir/placement.h"

#include "common/strings.h"
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

std::optional<std::string> ipuProblem(int64_t ipu) {
  if (ipu < 0 || ipu >= kMaxIpus) {
    return strCat("IPU ", ipu, " is outside 0..", kMaxIpus - 1);
  }
  return std::nullopt;
}

std::optional<std::string> blockIpuProblem(int64_t ipu) {
  return ipu == -1 ? std::nullopt : ipuProblem(ipu);
}

std::optional<std::string> placementProblem(const Placement& placement) {
  if (placement.stage < 0 || placement.stage >= kMaxPipelineStages) {
    return strCat("pipeline stage ", placement.stage, " is outside 0..", kMaxPipelineStages - 1);
  }
  return ipuProblem(placement.ipu);
}

int64_t homeIpu(const Value& value) {
  if (value.producer() != nullptr) return value.producer()->placement().ipu;
  for (const Node* user : value.users()) {
    if (user->kind() != OpKind::IpuCopy) return user->placement().ipu;
  }
  return value.users().empty() ? 0 : value.users().front()->placement().ipu;
}

} // namespace popsim::ir
