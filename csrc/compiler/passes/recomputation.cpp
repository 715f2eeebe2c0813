#include "compiler/passes/recomputation.h"

#include "common/check.h"
#include "compiler/passes.h"
#include "ir/op_kind.h"

#include <unordered_map>
#include <unordered_set>

namespace popsim::compiler {
namespace {

// Whether running `node` again gives the same outputs from the same inputs.
// Random ops do: each draw is a function of the seed, the op's stream and its
// counter input (ir/ops/random.cpp). Their counter is a variable that moves on
// after every micro-batch's forward pass, so the forward pass reads a copy of
// it (a value, stashed like any other) and the recomputed op reads the same
// copy: a recomputed dropout repeats its mask, as PopART recomputes dropout
// from the same seed, instead of stashing everything downstream of it.
bool recomputable(const ir::Node& node) {
  return node.kind() != ir::OpKind::IpuCopy && node.kind() != ir::OpKind::RecomputationCheckpoint &&
         !node.hasSideEffects() && !node.outputs().empty();
}

class StageRecomputation {
public:
  StageRecomputation(ir::Graph& graph, const TaskLayout& layout, size_t forward, size_t backward)
      : graph_(graph), layout_(layout), forward_(forward), backward_(backward) {}

  void run() {
    std::vector<ir::Node*> backwardNodes;
    for (const auto& node : graph_.nodes()) {
      if (layout_.taskOf(*node) == backward_ && node->placement().phase != ir::Phase::Forward)
        backwardNodes.push_back(node.get());
    }
    for (ir::Node* node : backwardNodes) {
      // Each value is recomputed just before the first backward op that
      // reads it: the backward pass of a layer recomputes that layer (from
      // its checkpoint), so only one layer's recomputed activations are live
      // at a time rather than the whole stage's.
      insertBefore_ = node;
      graph_.setInsertionPoint(node);
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
    if (producer == nullptr || layout_.taskOf(*producer) != forward_ ||
        producer->placement().phase != ir::Phase::Forward || !recomputable(*producer)) {
      return value;
    }
    auto done = clones_.find(value);
    if (done != clones_.end()) return done->second;
    // A checkpointed value is stashed as its checkpoint (a view of the same
    // bytes), also where gradients read it directly (an activation's output).
    for (ir::Node* user : value->users()) {
      if (user->kind() == ir::OpKind::RecomputationCheckpoint &&
          layout_.taskOf(*user) == forward_ && user->placement().phase == ir::Phase::Forward) {
        return user->output();
      }
    }
    std::vector<ir::Value*> inputs;
    for (size_t i = 0; i < producer->inputs().size(); ++i) {
      ir::Value* input = producer->input(i);
      inputs.push_back(input->isVariable() && ir::opFamily(producer->kind()) == ir::OpFamily::Random
                           ? snapshot(producer, i)
                           : recomputed(input));
    }
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

  // Makes `reader` (a forward op) read input `index`, a variable, through a
  // copy taken just before it, and returns the copy.
  ir::Value* snapshot(ir::Node* reader, size_t index) {
    ir::Value* variable = reader->input(index);
    graph_.setInsertionPoint(reader);
    ir::Node* copy = graph_.addNode(ir::OpKind::Affine, {variable},
                                    {{"scale", 1.0}, {"shift", 0.0}}, reader->location());
    copy->setPlacement(reader->placement().forAddedOp());
    graph_.setInsertionPoint(insertBefore_);
    graph_.replaceInput(reader, index, copy->output());
    return copy->output();
  }

  ir::Graph& graph_;
  const TaskLayout& layout_;
  size_t forward_;
  size_t backward_;
  const ir::Node* insertBefore_ = nullptr; // the backward op being rewired
  std::unordered_map<const ir::Value*, ir::Value*> clones_;
};

} // namespace

void recomputeStages(ir::Graph& graph, const TaskLayout& layout) {
  if (!layout.training()) return;
  const auto& tasks = layout.tasks();
  // A stage whose forward and backward passes run as one task (the last
  // stage, or a model on one IPU) has nothing to stash between them; it
  // recomputes between the checkpoints the model marks, which bounds the
  // activations its backward pass keeps to the checkpoints and one
  // segment's. Without checkpoints it would recompute everything for
  // nothing, so it keeps its activations.
  std::vector<bool> checkpointed(tasks.size(), false);
  for (const auto& node : graph.nodes()) {
    if (node->kind() == ir::OpKind::RecomputationCheckpoint)
      checkpointed[layout.taskOf(*node)] = true;
  }
  for (size_t task = 0; task < layout.pipelineLength(); ++task) {
    if (tasks[task].kind == TaskKind::ForwardBackward && checkpointed[task]) {
      StageRecomputation(graph, layout, task, task).run();
    }
  }
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
