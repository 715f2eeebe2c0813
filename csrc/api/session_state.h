#pragma once

#include "api/compiled_module.h"
#include "api/optimizer_groups.h"
#include "popsim/session.h"

#include <memory>
#include <vector>

namespace popsim {

// What a public session holds: its compiled module and, for training, the
// parameter groups whose optimizers' hyper-parameters the device has.
struct Session::State {
  std::unique_ptr<api::CompiledModule> compiled;
  std::vector<api::OptimizerGroup> optimizerGroups;
};

} // namespace popsim
