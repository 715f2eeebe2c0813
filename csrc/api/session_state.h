#pragma once

#include "api/compiled_module.h"
#include "popsim/session.h"

#include <memory>
#include <optional>

namespace popsim {

// What a public session holds: its compiled module and, for training, the
// optimizer whose hyper-parameters the device has.
struct Session::State {
  std::unique_ptr<api::CompiledModule> compiled;
  std::optional<Optimizer> optimizer;
};

} // namespace popsim
