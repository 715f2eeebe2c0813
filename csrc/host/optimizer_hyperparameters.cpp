#include "host/optimizer_hyperparameters.h"

#include "ir/state_names.h"

namespace popsim::host {

void writeOptimizerHyperparameters(DeviceProgram& program,
                                   std::vector<std::map<std::string, double>> groups,
                                   double gradScale, double lossScaling) {
  const bool inState = program.first().graph().findState(ir::kLossScalingName) != nullptr;
  for (size_t group = 0; group < groups.size(); ++group) {
    groups[group]["grad_scale"] = inState ? gradScale : gradScale / lossScaling;
    program.writeHyperparameters(group, groups[group]);
  }
  if (inState) {
    float factor = static_cast<float>(lossScaling);
    program.writeVariables({{ir::kLossScalingName, {&factor, ir::DType::Float32, {}}}});
  }
}

} // namespace popsim::host
