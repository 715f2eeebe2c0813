#pragma once

#include "compiler/training/training_config.h"
#include "popsim/optim.h"

namespace popsim::api {

// The compiler's name for a public optimizer kind (defined in optimizers.cpp).
compiler::OptimizerKind compilerKindOf(Optimizer::Kind kind);

} // namespace popsim::api
