#include "host/execution_strategy.h"

#include "common/check.h"

#include <algorithm>
#include <map>
#include <set>

namespace popsim::host {
namespace {

std::string quotedList(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

// A stage as Python's repr shows it: Stage('B1', 'B2').ipu(3).
std::string stageText(const StrategyStage& stage) {
  std::string text = "Stage(" + quotedList(stage.blocks) + ")";
  if (stage.ipu.has_value()) text += ".ipu(" + std::to_string(*stage.ipu) + ")";
  return text;
}

// Stage ids renumbered 0, 1, ... keeping their order.
std::vector<compiler::StageAssignment> dense(std::vector<compiler::StageAssignment> assignment) {
  std::set<int64_t> ids;
  for (const compiler::StageAssignment& entry : assignment)
    ids.insert(entry.stage);
  std::map<int64_t, int64_t> index;
  for (int64_t id : ids)
    index.emplace(id, static_cast<int64_t>(index.size()));
  for (compiler::StageAssignment& entry : assignment)
    entry.stage = index.at(entry.stage);
  return assignment;
}

} // namespace

void checkPhaseIpus(const ExecutionStrategy& strategy) {
  if (strategy.kind != StrategyKind::ParallelPhased) return;
  size_t first = 0;
  for (size_t phase = 0; phase < strategy.phaseSizes.size(); ++phase) {
    const size_t count = static_cast<size_t>(strategy.phaseSizes[phase]);
    for (size_t i = first; i < first + count && i < strategy.stages.size(); ++i) {
      const StrategyStage& stage = strategy.stages[i];
      const int64_t ipu = stage.ipu.value_or(0);
      if (ipu % 2 != static_cast<int64_t>(phase % 2)) {
        const char* parity = phase % 2 == 0 ? "even" : "odd";
        throwOptionError("setExecutionStrategy",
                         strCat("ParallelPhasedExecution: phase ", phase, " runs ",
                                stageText(stage), " on IPU ", ipu, ", but ", parity,
                                " phases run on ", parity,
                                " IPUs (phases alternate between the two groups). Set "
                                "phase(i).ipus(...) to match."));
      }
    }
    first += count;
  }
}

namespace {

std::vector<compiler::StageAssignment>
listedStages(const ExecutionStrategy& strategy, const std::vector<ir::BlockAnnotation>& blocks) {
  std::vector<std::string> names;
  for (const ir::BlockAnnotation& block : blocks)
    names.push_back(block.name);
  const std::set<std::string> known(names.begin(), names.end());
  std::map<std::string, int64_t> listed;
  for (size_t index = 0; index < strategy.stages.size(); ++index) {
    for (const std::string& block : strategy.stages[index].blocks) {
      POPSIM_CHECK_OPTION(known.count(block) != 0, "setExecutionStrategy", "Unknown Block '", block,
                          "' in stage ", index, " of popsim.", strategy.name(),
                          ": the model has no such block. Its blocks are ",
                          names.empty() ? std::string("none") : quotedList(names), ".");
      listed[block] = static_cast<int64_t>(index);
    }
  }
  std::vector<compiler::StageAssignment> assignment;
  for (const ir::BlockAnnotation& block : blocks) {
    auto found = listed.find(block.name);
    POPSIM_CHECK_OPTION(found != listed.end(), "setExecutionStrategy", "Unknown Block '",
                        block.name, "' (entered at ", block.location.str(), "): popsim.",
                        strategy.name(), " places no stage for it. Add it to a popsim.Stage.");
    const StrategyStage& stage = strategy.stages[static_cast<size_t>(found->second)];
    const int64_t ipu = stage.ipu.has_value() ? *stage.ipu
                        : block.ipu >= 0      ? block.ipu
                                              : found->second;
    assignment.push_back({block.name, found->second, ipu});
  }
  return dense(std::move(assignment));
}

} // namespace

const char* ExecutionStrategy::name() const {
  switch (kind) {
  case StrategyKind::Pipelined: return "PipelinedExecution";
  case StrategyKind::Sharded: return "ShardedExecution";
  case StrategyKind::SerialPhased: return "SerialPhasedExecution";
  case StrategyKind::ParallelPhased: return "ParallelPhasedExecution";
  }
  return "ExecutionStrategy";
}

compiler::ScheduleKind ExecutionStrategy::scheduleKind() const {
  return kind == StrategyKind::Pipelined ? schedule : compiler::ScheduleKind::Sequential;
}

ExecutionStrategy defaultStrategy() {
  ExecutionStrategy strategy;
  strategy.autoStage = AutoStage::SameAsIpu;
  return strategy;
}

std::vector<compiler::StageAssignment>
assignStages(const ExecutionStrategy& strategy, const std::vector<ir::BlockAnnotation>& blocks) {
  if (!strategy.autoStage.has_value()) {
    return listedStages(strategy, blocks);
  }
  std::vector<compiler::StageAssignment> assignment;
  if (*strategy.autoStage == AutoStage::SameAsIpu) {
    for (const ir::BlockAnnotation& block : blocks) {
      POPSIM_CHECK_OPTION(
          block.ipu >= 0, "setExecutionStrategy", "Block '", block.name, "' (entered at ",
          block.location.str(),
          ") has no ipu_id, which AutoStage.SameAsIpu needs to choose its stage. Give "
          "it one (popsim.Block('",
          block.name, "', ipu_id=...)) or list the stages: popsim.", strategy.name(),
          "(popsim.Stage('", block.name, "').ipu(0), ...).");
      assignment.push_back({block.name, block.ipu, block.ipu});
    }
    return dense(std::move(assignment));
  }
  int64_t stage = -1;
  int64_t previousIpu = -1;
  for (size_t index = 0; index < blocks.size(); ++index) {
    const int64_t ipu = blocks[index].ipu >= 0 ? blocks[index].ipu : static_cast<int64_t>(index);
    if (stage < 0 || ipu != previousIpu) ++stage;
    previousIpu = ipu;
    assignment.push_back({blocks[index].name, stage, ipu});
  }
  return assignment;
}

} // namespace popsim::host
