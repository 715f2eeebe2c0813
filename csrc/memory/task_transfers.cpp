// Which values cross between tasks: the algorithm.
// 1. Each storage root's writer: the task of the node that defines it, or
//    for a graph input the task that streams it (its first user's, copies
//    aside, which ipu-copies placed on the input's home IPU); for a
//    read-only buffer copied to other IPUs, its first user's task likewise.
// 2. Each output is written by its storage root's writer.
// 3. Each node input written in another task crosses: through the link when
//    the node is an ipu_copy, otherwise through the stash when another task
//    of the IPU runs between the writer and the reader for some micro-batch
//    (one stash per value and reading task).

#include "memory/task_transfers.h"

#include "common/check.h"

#include <algorithm>
#include <map>
#include <optional>

namespace popsim::memory {

TaskTransfers planTaskTransfers(const compiler::Program& program, const MemoryPlan& plan,
                                const TensorLocation& activations) {
  const ir::Graph& graph = *program.graph;
  const compiler::TaskLayout& layout = program.layout;
  TaskTransfers result;
  result.tasks.assign(layout.tasks().size(), {});

  // Step 1: the task that writes each storage root.
  std::map<const ir::Value*, size_t> writer;
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* output : node->outputs()) {
      const ir::Value* root = plan.storageRoot(output);
      if (root == output) writer[root] = layout.taskOf(*node);
    }
  }
  // The first task that reads `value` where it lives (its ipu_copy users read
  // it for other IPUs); none when only copies read it.
  const auto firstReader = [&](const ir::Value& value) -> std::optional<size_t> {
    std::optional<size_t> task;
    for (const ir::Node* user : value.users()) {
      if (user->kind() == ir::OpKind::IpuCopy) continue;
      const size_t candidate = layout.taskOf(*user);
      task = task.has_value() ? std::min(*task, candidate) : candidate;
    }
    return task;
  };
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const ir::Value* input = graph.inputs()[i];
    const size_t task = firstReader(*input).value_or(0);
    writer[input] = task;
    result.tasks[task].streamedInputs.push_back(i);
  }
  // A read-only buffer read on several IPUs (ipu-copies) is sent on by the
  // first task that reads it on its home IPU, as an input is.
  for (const ir::Value* weight : graph.weights()) {
    const auto& users = weight->users();
    const bool copied = std::any_of(users.begin(), users.end(), [](const ir::Node* user) {
      return user->kind() == ir::OpKind::IpuCopy;
    });
    if (!copied) continue;
    if (const std::optional<size_t> task = firstReader(*weight)) writer[weight] = *task;
  }
  // Step 2: outputs.
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    auto it = writer.find(plan.storageRoot(graph.outputs()[i]));
    result.tasks[it != writer.end() ? it->second : 0].producedOutputs.push_back(i);
  }

  // Step 3: where each task instance runs in its IPU's order for one step.
  std::map<std::pair<size_t, int64_t>, size_t> position;
  for (const std::vector<compiler::ScheduledTask>& order : program.ipuOrders()) {
    for (size_t index = 0; index < order.size(); ++index) {
      position[{order[index].task, order[index].microBatch}] = index;
    }
  }
  const int64_t microBatches = program.microBatchesPerStep();
  const auto stashed = [&](size_t from, size_t to) {
    if (!layout.tasks()[from].perMicroBatch()) { // a gradient norm read by its IPU's update
      return position.at({to, -1}) != position.at({from, -1}) + 1;
    }
    for (int64_t m = 0; m < microBatches; ++m) {
      const int64_t consumer = layout.tasks()[to].perMicroBatch() ? m : -1;
      if (position.at({to, consumer}) != position.at({from, m}) + 1) return true;
    }
    return false;
  };
  std::map<std::pair<const ir::Value*, size_t>, bool> stashes;
  for (const auto& node : graph.nodes()) {
    const size_t task = layout.taskOf(*node);
    for (const ir::Value* input : node->inputs()) {
      const ir::Value* root = plan.storageRoot(input);
      auto written = writer.find(root);
      if (written == writer.end() || written->second == task) continue;
      const size_t from = written->second;
      if (node->kind() == ir::OpKind::IpuCopy) {
        result.transfers.push_back({root, from, task, node.get(), false});
        continue;
      }
      POPSIM_ASSERT(layout.tasks()[task].perMicroBatch() || !layout.tasks()[from].perMicroBatch() ||
                        microBatches == 1,
                    node->describe(), " reads a per-micro-batch value in a per-step task.");
      if (!stashed(from, task) || !stashes.emplace(std::make_pair(root, task), true).second) {
        continue;
      }
      const bool offChip = placedOffChip(*root, activations);
      if (offChip) {
        // Streamed out after the producing task, back in before the reader.
        result.tasks[from].stashOutBytes += simulatedBytes(*root);
        result.tasks[task].stashInBytes += simulatedBytes(*root);
      }
      result.transfers.push_back({root, from, task, nullptr, offChip});
    }
  }
  return result;
}

} // namespace popsim::memory
