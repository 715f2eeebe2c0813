#pragma once

// An optimizer's numeric hyper-parameters on the device, as both faces write
// them (at compile time and on setOptimizer): each group's vector, with the
// step's gradient scale, and the loss scaling factor. A constant factor is
// compiled into the backward pass and divided out through each group's
// grad_scale; a factor the program holds in its state
// (ir::kLossScalingName: automatic loss scaling, or Python's variable
// loss_scaling) is written there, and the program divides it out itself.

#include "host/device_program.h"

#include <map>
#include <string>
#include <vector>

namespace popsim::host {

// `groups` holds each parameter group's hyper-parameters by name ("lr",
// ...); their grad_scale is set from `gradScale` and `lossScaling`.
void writeOptimizerHyperparameters(DeviceProgram& program,
                                   std::vector<std::map<std::string, double>> groups,
                                   double gradScale, double lossScaling);

} // namespace popsim::host
