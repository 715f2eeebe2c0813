#pragma once

#include "runtime/executable.h"

#include <map>
#include <string>

namespace popsim::runtime {

// Writes the numeric hyper-parameters of optimizer parameter group `group`
// (lr, momentum, betas, eps, weight_decay, grad_scale, ... by the names
// compiler::hyperParameterNames gives for the program's optimizer) into the
// group's device state, so that changing them needs no recompilation.
// Nothing is written for a group none of whose parameters reaches the loss.
// Throws InvalidOption naming a missing hyper-parameter.
void writeHyperparameters(Executable& executable, size_t group,
                          const std::map<std::string, double>& values);

} // namespace popsim::runtime
