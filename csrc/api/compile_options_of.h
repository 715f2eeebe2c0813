#pragma once

#include "popsim/options.h"
#include "runtime/compile_options.h"

namespace popsim::api {

// The typed options the core compiles with, from the public Options: what
// Python's _compilation.compile_options builds from popsim.Options, for a
// program of one replica; `config` is a training program's optimizer step.
// Throws InvalidOption for options that name IPUs the system does not have.
runtime::CompileOptions compileOptionsOf(const Options& options, bool training,
                                         const compiler::TrainingConfig& config = {});

} // namespace popsim::api
