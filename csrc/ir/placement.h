#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace popsim::ir {

// When an op runs in a training step. Forward and backward ops run once per
// micro-batch; update ops (the optimizer) once per step, after the
// micro-batches' gradients have been accumulated, and before them the
// gradient-norm ops of gradient clipping (each IPU's sum of squares, which
// every IPU's update phase reads).
enum class Phase { Forward, Backward, GradientNorm, Update };
const char* phaseName(Phase phase);

// Where and when an op runs on the simulated machine: the user's block
// annotation, the pipeline stage and IPU its block was assigned to (stage 0
// on IPU 0 without annotations), its phase in a training step, and how the
// simulated IPU runs it (recomputed, in float16).
struct Placement {
  std::string block;
  int64_t stage = 0;
  int64_t ipu = 0;
  Phase phase = Phase::Forward;
  // A forward op computed again in the backward pass (the recomputation
  // pass's clone), which the cost stage counts as recomputation.
  bool recomputed = false;
  // The IPU runs the op in float16 although popsim computes it in float32:
  // the frontend widens a float16 aten op that lowers to several IR ops so
  // that they round once, as the IPU's single vertex does, and not after
  // each. The simulated memory and costs count its float32 values as
  // float16 and its casts between the two as free (memory::simulatedBytes,
  // ir::isFreeOnIpu); popsim's own buffers and results are unchanged. The
  // op's gradients and recomputed copies inherit it with the placement.
  bool float16OnIpu = false;

  // The place of an op popsim adds beside this one (an inter-IPU copy, a
  // weight's gather, a snapshot): where it runs, not how this op computes.
  Placement forAddedOp() const {
    Placement added = *this;
    added.float16OnIpu = false;
    return added;
  }

  bool operator==(const Placement& other) const {
    return block == other.block && stage == other.stage && ipu == other.ipu &&
           phase == other.phase && recomputed == other.recomputed &&
           float16OnIpu == other.float16OnIpu;
  }
};

// Bounds on where an op can be placed: Graphcore's largest systems have 1,024
// IPUs, and a pipeline has a few stages per IPU at most. Files and IR text
// are checked against them before any pass sizes a table by a stage or IPU.
inline constexpr int64_t kMaxIpus = 1024;
inline constexpr int64_t kMaxPipelineStages = 4 * kMaxIpus;

// Why `placement` is out of those bounds (a negative or too large stage or
// IPU), or nullopt.
std::optional<std::string> placementProblem(const Placement& placement);
// The same for an IPU index alone, and for a block annotation's (where -1
// means the block asked for none).
std::optional<std::string> ipuProblem(int64_t ipu);
std::optional<std::string> blockIpuProblem(int64_t ipu);

class Value;

// The IPU a value lives on: its producer's, or for a graph input, weight,
// state or constant its first user's that is not an inter-IPU copy (IPU 0
// when unused).
int64_t homeIpu(const Value& value);

} // namespace popsim::ir
