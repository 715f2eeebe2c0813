#pragma once

#include "ir/graph.h"

#include <string>
#include <vector>

namespace popsim::compiler {

// The units a program runs in. Per micro-batch: the forward part of each
// pipeline stage and, in training, its backward part; the last stage runs its
// forward and backward parts as one task (K stages make 2K - 1 pipeline
// steps, as in PopTorch). Per optimizer step: each IPU's weight update, and
// before them, when gradients are clipped, each IPU's gradient-norm part.
enum class TaskKind { Forward, Backward, ForwardBackward, GradientNorm, Update };

struct PipelineTask {
  TaskKind kind = TaskKind::Forward;
  int64_t stage = 0; // -1 for gradient norms and updates
  int64_t ipu = 0;
  std::string name() const; // "F0", "B1", "FB3", "N2", "U2"
  bool perMicroBatch() const { return kind != TaskKind::GradientNorm && kind != TaskKind::Update; }
};

// The tasks of a graph whose nodes have stages and IPUs, in pipeline order:
// F0 .. F(S-2), FB(S-1) (F(S-1) for inference), B(S-2) .. B0, then N0 ..
// N(K-1) if the graph has gradient-norm ops, then U0 .. U(K-1). Every stage
// runs on one IPU (checked).
class TaskLayout {
public:
  TaskLayout() = default;
  TaskLayout(const ir::Graph& graph, bool training);

  const std::vector<PipelineTask>& tasks() const { return tasks_; }
  size_t taskOf(const ir::Node& node) const;
  // Per-micro-batch tasks in the order one micro-batch passes through them.
  size_t pipelineLength() const { return pipelineLength_; }
  int64_t numStages() const { return static_cast<int64_t>(stageIpus_.size()); }
  int64_t numIpus() const { return numIpus_; }
  int64_t ipuOfStage(int64_t stage) const { return stageIpus_.at(static_cast<size_t>(stage)); }
  bool training() const { return training_; }

private:
  std::vector<PipelineTask> tasks_;
  std::vector<int64_t> stageIpus_;
  int64_t numIpus_ = 1;
  size_t pipelineLength_ = 0;
  size_t firstUpdate_ = 0; // the index of U0
  bool training_ = false;
};

// Orders the nodes task by task (stably, so each task keeps the model's order)
// and checks that no task needs a value a later task computes; returns
// whether a node moved.
bool orderNodesByTask(ir::Graph& graph, const TaskLayout& layout);

} // namespace popsim::compiler
