#include "compiler/passes/stage_assignment.h"

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/passes/ipu_copies.h"

#include <algorithm>
#include <unordered_map>

namespace popsim::compiler {
namespace {

std::string where(const ir::Node& node) {
  std::string text = node.describe();
  if (!node.placement().block.empty()) {
    text += " (block '" + node.placement().block + "')";
  }
  return text;
}

void checkStagesAscend(const ir::Graph& graph) {
  const ir::Node* latest = nullptr;
  for (const auto& node : graph.nodes()) {
    if (node->placement().phase != ir::Phase::Forward) continue;
    if (latest != nullptr && node->placement().stage < latest->placement().stage) {
      throwError(ErrorKind::Compilation,
                 strCat("Pipeline stages must ascend in the order the model runs: ", where(*node),
                        " is in stage ", node->placement().stage, " but runs after ",
                        where(*latest), " in stage ", latest->placement().stage,
                        ". Order the stages as the model runs its blocks; to place blocks on "
                        "IPUs 0, 1, 0 use popsim.AutoStage.AutoIncrement or one popsim.Stage "
                        "per block."));
    }
    if (latest == nullptr || node->placement().stage > latest->placement().stage) {
      latest = node.get();
    }
  }
}

void checkWeightsStayOnOneIpu(const ir::Graph& graph) {
  for (const ir::Value* weight : graph.weights()) {
    if (readOnlyBuffer(*weight)) continue; // (read through copies on other IPUs)
    const ir::Node* first = nullptr;
    for (const ir::Node* user : weight->users()) {
      if (first == nullptr) {
        first = user;
      } else if (user->placement().ipu != first->placement().ipu) {
        throwError(ErrorKind::Compilation,
                   strCat("Weight '", weight->name(), "' is used on IPU ", first->placement().ipu,
                          " by ", where(*first), " and on IPU ", user->placement().ipu, " by ",
                          where(*user),
                          ". Layers that share weights must run on the same IPU: put their "
                          "blocks on one IPU."));
      }
    }
  }
}

std::vector<std::string> blockNames(const ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::BlockAnnotation& block : graph.blocks())
    names.push_back("'" + block.name + "'");
  return names;
}

} // namespace

bool assignStages(ir::Graph& graph, const std::vector<StageAssignment>& stages) {
  std::unordered_map<std::string, const StageAssignment*> byBlock;
  for (const StageAssignment& stage : stages) {
    // The execution strategies (strategies.py) check the user's stages and
    // blocks, naming the strategy; here they are invariants.
    POPSIM_ASSERT(stage.stage >= 0 && stage.ipu >= 0, "block '", stage.block,
                  "' assigned to stage ", stage.stage, " on IPU ", stage.ipu, ".");
    byBlock[stage.block] = &stage;
  }
  for (const ir::BlockAnnotation& block : graph.blocks()) {
    POPSIM_ASSERT(byBlock.count(block.name) != 0, "block '", block.name, "' has no stage.");
  }
  bool changed = false;
  for (const auto& node : graph.nodes()) {
    ir::Placement placement = node->placement();
    if (placement.block.empty() || stages.empty()) continue;
    const auto assigned = byBlock.find(placement.block);
    POPSIM_CHECK(assigned != byBlock.end(), ErrorKind::Compilation, where(*node),
                 " is in a block that no stage names (the model's blocks: ",
                 join(blockNames(graph), ", "), "). Declare the block or assign it a stage.");
    const StageAssignment& stage = *assigned->second;
    changed = changed || placement.stage != stage.stage || placement.ipu != stage.ipu;
    placement.stage = stage.stage;
    placement.ipu = stage.ipu;
    node->setPlacement(placement);
  }
  checkStagesAscend(graph);
  checkWeightsStayOnOneIpu(graph);
  return changed;
}

int64_t stageCount(const ir::Graph& graph) {
  int64_t count = 1;
  for (const auto& node : graph.nodes()) {
    count = std::max(count, node->placement().stage + 1);
  }
  return count;
}

int64_t ipuCount(const ir::Graph& graph) {
  int64_t count = 1;
  for (const auto& node : graph.nodes()) {
    count = std::max(count, node->placement().ipu + 1);
  }
  return count;
}

std::unique_ptr<Pass> createStageAssignmentPass() {
  return std::make_unique<FunctionPass>("stage-assignment",
                                        [](ir::Graph& graph, PassContext& context) {
                                          return assignStages(graph, context.options().stages);
                                        });
}

} // namespace popsim::compiler
