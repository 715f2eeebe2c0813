#include "ir/placement.h"

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

} // namespace popsim::ir
