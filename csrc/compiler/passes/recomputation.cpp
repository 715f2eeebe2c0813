#include "compiler/passes/recomputation.h"

#include "common/check.h"
#include "compiler/passes.h"

#include <unordered_map>
#include <unordered_set>

namespace popsim::compiler {
namespace {

// Whether running `node` again gives the same outputs from the same inputs.
bool recomputable(const ir::Node& node) {
  return node.kind() != ir::OpKind::IpuCopy && node.kind() != ir::OpKind::RecomputationCheckpoint &&
         !node.hasSideEffects() && ir::opFamily(node.kind()) != ir::OpFamily::Random &&
         !node.outputs().empty();
}

class StageRecomputation {
public:
  StageRecomputation(ir::Graph& graph, const TaskLayout& layout, size_t forward, size_t backward)
      : graph_(graph), layout_(layout), forward_(forward), backward_(backward) {}

  void run() {
    const ir::Node* firstBackward = nullptr;
    std::vector<ir::Node*> backwardNodes;
    for (const auto& node : graph_.nodes()) {
      if (layout_.taskOf(*node) != backward_) continue;
      if (firstBackward == nullptr) firstBackward = node.get();
      backwardNodes.push_back(node.get());
    }
    if (firstBackward == nullptr) return;
    graph_.setInsertionPoint(firstBackward);
    for (ir::Node* node : backwardNodes) {
      for (size_t i = 0; i < node->inputs().size(); ++i) {
        ir::Value* input = node->input(i);
        ir::Value* again = recomputed(input);
        if (again != input) graph_.replaceInput(node, i, again);
      }
    }
    graph_.setInsertionPoint(nullptr);
  }

private:
  // The value to read in the backward task: a clone for a recomputable forward
  // value of this stage, else the value itself (stashed if it crosses tasks).
  ir::Value* recomputed(ir::Value* value) {
    ir::Node* producer = value->producer();
    if (producer == nullptr || layout_.taskOf(*producer) != forward_ || !recomputable(*producer)) {
      return value;
    }
    auto done = clones_.find(value);
    if (done != clones_.end()) return done->second;
    // A checkpointed value is stashed as its checkpoint (a view of the same
    // bytes), also where gradients read it directly (an activation's output).
    for (ir::Node* user : value->users()) {
      if (user->kind() == ir::OpKind::RecomputationCheckpoint &&
          layout_.taskOf(*user) == forward_) {
        return user->output();
      }
    }
    std::vector<ir::Value*> inputs;
    for (ir::Value* input : producer->inputs())
      inputs.push_back(recomputed(input));
    ir::Node* clone =
        graph_.addNode(producer->kind(), inputs, producer->attrs(), producer->location());
    ir::Placement placement = producer->placement();
    placement.phase = ir::Phase::Backward;
    placement.recomputed = true;
    clone->setPlacement(placement);
    clone->setAvailableMemoryProportion(producer->availableMemoryProportion());
    for (size_t i = 0; i < producer->outputs().size(); ++i) {
      clones_[producer->output(i)] = clone->output(i);
    }
    return clones_.at(value);
  }

  ir::Graph& graph_;
  const TaskLayout& layout_;
  size_t forward_;
  size_t backward_;
  std::unordered_map<const ir::Value*, ir::Value*> clones_;
};

} // namespace

void recomputeStages(ir::Graph& graph, const TaskLayout& layout) {
  if (!layout.training()) return;
  const auto& tasks = layout.tasks();
  for (size_t forward = 0; forward < layout.pipelineLength(); ++forward) {
    if (tasks[forward].kind != TaskKind::Forward) continue;
    for (size_t backward = 0; backward < layout.pipelineLength(); ++backward) {
      if (tasks[backward].kind == TaskKind::Backward &&
          tasks[backward].stage == tasks[forward].stage) {
        StageRecomputation(graph, layout, forward, backward).run();
      }
    }
  }
}

std::unique_ptr<Pass> createRecomputationPass() {
  return std::make_unique<FunctionPass>(
      "recomputation",
      [](ir::Graph& graph, PassContext& context) {
        const size_t before = graph.nodes().size();
        recomputeStages(graph, context.layout(graph));
        return graph.nodes().size() != before;
      },
      /*optional=*/true);
}

} // namespace popsim::compiler
