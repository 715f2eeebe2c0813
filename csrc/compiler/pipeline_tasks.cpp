#include "compiler/pipeline_tasks.h"

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/passes/stage_assignment.h"

#include <algorithm>
#include <unordered_map>

namespace popsim::compiler {

std::string PipelineTask::name() const {
  switch (kind) {
  case TaskKind::Forward: return "F" + std::to_string(stage);
  case TaskKind::Backward: return "B" + std::to_string(stage);
  case TaskKind::ForwardBackward: return "FB" + std::to_string(stage);
  case TaskKind::GradientNorm: return "N" + std::to_string(ipu);
  case TaskKind::Update: return "U" + std::to_string(ipu);
  }
  return "?";
}

TaskLayout::TaskLayout(const ir::Graph& graph, bool training) : training_(training) {
  const int64_t stages = stageCount(graph);
  numIpus_ = ipuCount(graph);
  stageIpus_.assign(static_cast<size_t>(stages), -1);
  for (const auto& node : graph.nodes()) {
    const ir::Placement& placement = node->placement();
    if (placement.phase == ir::Phase::Update || placement.phase == ir::Phase::GradientNorm) {
      continue;
    }
    int64_t& ipu = stageIpus_[static_cast<size_t>(placement.stage)];
    POPSIM_CHECK(ipu < 0 || ipu == placement.ipu, ErrorKind::Compilation, "stage ", placement.stage,
                 " has ops on IPU ", ipu, " and on IPU ", placement.ipu, " (", node->describe(),
                 "); a stage runs on one IPU.");
    ipu = placement.ipu;
  }
  for (int64_t& ipu : stageIpus_) {
    if (ipu < 0) ipu = 0; // a stage with no ops (e.g. all its ops were unused)
  }
  for (int64_t s = 0; s < stages; ++s) {
    const bool last = s == stages - 1;
    tasks_.push_back(
        {training && last ? TaskKind::ForwardBackward : TaskKind::Forward, s, ipuOfStage(s)});
  }
  if (training) {
    for (int64_t s = stages - 2; s >= 0; --s) {
      tasks_.push_back({TaskKind::Backward, s, ipuOfStage(s)});
    }
  }
  pipelineLength_ = tasks_.size();
  const bool clipped =
      std::any_of(graph.nodes().begin(), graph.nodes().end(), [](const auto& node) {
        return node->placement().phase == ir::Phase::GradientNorm;
      });
  if (training && clipped) {
    for (int64_t ipu = 0; ipu < numIpus_; ++ipu) {
      tasks_.push_back({TaskKind::GradientNorm, -1, ipu});
    }
  }
  firstUpdate_ = tasks_.size();
  if (training) {
    for (int64_t ipu = 0; ipu < numIpus_; ++ipu) {
      tasks_.push_back({TaskKind::Update, -1, ipu});
    }
  }
}

size_t TaskLayout::taskOf(const ir::Node& node) const {
  const ir::Placement& placement = node.placement();
  const int64_t stages = numStages();
  switch (placement.phase) {
  case ir::Phase::Forward: return static_cast<size_t>(placement.stage);
  case ir::Phase::Backward:
    POPSIM_ASSERT(training_, "a backward op in an inference program: ", node.describe());
    return static_cast<size_t>(stages - 1 + (stages - 1 - placement.stage));
  case ir::Phase::GradientNorm:
    POPSIM_ASSERT(training_ && firstUpdate_ > pipelineLength_,
                  "a gradient-norm op without gradient-norm tasks: ", node.describe());
    return pipelineLength_ + static_cast<size_t>(placement.ipu);
  case ir::Phase::Update:
    POPSIM_ASSERT(training_, "an update op in an inference program: ", node.describe());
    return firstUpdate_ + static_cast<size_t>(placement.ipu);
  }
  return 0;
}

bool orderNodesByTask(ir::Graph& graph, const TaskLayout& layout) {
  std::vector<const ir::Node*> order;
  for (const auto& node : graph.nodes()) {
    order.push_back(node.get());
  }
  std::stable_sort(order.begin(), order.end(), [&](const ir::Node* a, const ir::Node* b) {
    return layout.taskOf(*a) < layout.taskOf(*b);
  });
  std::unordered_map<const ir::Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
  }
  for (const ir::Node* node : order) {
    for (const ir::Value* input : node->inputs()) {
      const ir::Node* producer = input->producer();
      if (producer != nullptr && position.at(producer) > position.at(node)) {
        const auto& tasks = layout.tasks();
        throwError(ErrorKind::Compilation,
                   strCat(node->describe(), " in pipeline task ",
                          tasks[layout.taskOf(*node)].name(), " needs the result of ",
                          producer->describe(), ", which runs later, in task ",
                          tasks[layout.taskOf(*producer)].name(),
                          ". Values must flow forward through the stages: check the order of the "
                          "blocks and stages."));
      }
    }
  }
  bool moved = false;
  for (size_t i = 0; i < order.size(); ++i) {
    moved = moved || order[i] != graph.nodes()[i].get();
  }
  if (moved) graph.reorderNodes(order);
  return moved;
}

std::unique_ptr<Pass> createTaskOrderPass() {
  return std::make_unique<FunctionPass>("task-order", [](ir::Graph& graph, PassContext& context) {
    return orderNodesByTask(graph, context.layout(graph));
  });
}

} // namespace popsim::compiler
