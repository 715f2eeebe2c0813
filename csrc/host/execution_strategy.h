#pragma once

// Execution strategies: how a model's blocks become pipeline stages on IPUs
// (Python's popsim.PipelinedExecution, ShardedExecution and the phased
// executions; the C++ API's strategies by module path). A strategy lists its
// stages, each of one or more blocks, or gives a rule (AutoStage) that makes
// them from the blocks the model enters.

#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_schedule.h"
#include "ir/graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace popsim::host {

enum class StrategyKind { Pipelined, Sharded, SerialPhased, ParallelPhased };

// How blocks map to stages when a strategy lists none.
enum class AutoStage {
  SameAsIpu,     // a block's stage is its ipu_id
  AutoIncrement, // a new stage whenever the IPU changes along the model
};

// Where a phased execution keeps tensors between its phases (PopTorch's
// values, in its order). The off-chip kinds load and store through the IO
// tiles, beside the compute, when some are set aside; NoOverlap always moves
// them through the compute tiles.
enum class Liveness {
  AlwaysLive,
  OffChipAfterFwd,
  OffChipAfterFwdNoOverlap,
  OffChipAfterEachPhase
};

// Blocks that run together as one stage, on `ipu` when it is set (else on
// their ipu_id, else on the IPU numbered as the stage's position).
struct StrategyStage {
  std::vector<std::string> blocks;
  std::optional<int64_t> ipu;
};

struct ExecutionStrategy {
  StrategyKind kind = StrategyKind::Pipelined;
  // A pipeline's order of forward and backward passes (the others run one
  // task at a time).
  compiler::ScheduleKind schedule = compiler::ScheduleKind::Interleaved;
  // Set: the stages come from this rule, and `stages` is empty.
  std::optional<AutoStage> autoStage;
  std::vector<StrategyStage> stages;
  // Phased executions: how many of `stages` each phase runs, in order.
  std::vector<int64_t> phaseSizes;
  Liveness liveness = Liveness::AlwaysLive;
  bool separateBackwardPhase = false; // recorded: phases run one after another

  // Python's class name ("PipelinedExecution"), which messages use.
  const char* name() const;
  // The schedule its tasks follow: the pipeline's, or one task at a time.
  compiler::ScheduleKind scheduleKind() const;
};

// What a model with blocks and no strategy runs: PipelinedExecution with
// AutoStage.SameAsIpu, a stage per IPU, as PopTorch does.
ExecutionStrategy defaultStrategy();

// The stage and IPU of each of the model's blocks (in the order the model
// enters them). Throws InvalidOption naming the block and the strategy for a
// block the strategy does not place, a listed block the model does not have,
// and a block without the ipu_id its rule needs.
std::vector<compiler::StageAssignment> assignStages(const ExecutionStrategy& strategy,
                                                    const std::vector<ir::BlockAnnotation>& blocks);

// Throws InvalidOption for a stage of a parallel phased execution on an IPU
// of the wrong parity (even phases run on even IPUs, odd on odd).
void checkPhaseIpus(const ExecutionStrategy& strategy);

} // namespace popsim::host
