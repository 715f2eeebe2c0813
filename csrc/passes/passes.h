#pragma once

#include "passes/pass.h"

#include <memory>

// Factories for every graph pass. Each pass lives in its own file, named after
// the factory, with its algorithm written out at the top.
namespace popsim::passes {

// Removes nodes whose results are never used, then unused weights and constants.
std::unique_ptr<Pass> createDeadCodeEliminationPass();

// Removes layout no-ops: reshapes to the same shape, reshape chains, identity
// permutes, full slices and affine(scale=1, shift=0).
std::unique_ptr<Pass> createSimplifyLayoutPass();

} // namespace popsim::passes
