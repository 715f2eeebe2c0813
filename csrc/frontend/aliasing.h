#pragma once

#include "frontend/node_context.h"

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace popsim::frontend {

// The input whose memory output `index` of `node` shares in eager PyTorch
// (the tensor it views, or the one an in-place op writes and returns), if any.
const torch::jit::Value* sharedInputOf(const torch::jit::Node& node, size_t index);
// The inputs `node` writes in place, by index.
std::vector<size_t> writtenArguments(const torch::jit::Node& node);
// In-place ops that change only a tensor's sizes and strides (x.unsqueeze_(0),
// x.t_()): the tensor becomes a view of its own memory.
bool changesOnlyLayout(const torch::jit::Node& node);

// Eager PyTorch's aliasing, replayed on popsim's value-semantics IR.
//
// A trace records views (x[0], x.view(...), x.t()) and in-place ops
// (x += 1, y[:, 0].mul_(2)) as they ran, with the memory sharing left
// implicit. Every tensor that something views gets a Storage; each view knows
// its path (layout ops) from the storage's contents. An in-place write
// through a view is carried back into new contents (slice_update and inverse
// reshapes and permutes), and every other view of the storage is read again
// from them before its next use, so that each op sees what it saw in eager
// PyTorch. The schema's alias annotations (Tensor(a) and Tensor(a!)) say
// which ops view and which write.
class Aliasing {
public:
  Aliasing(ir::Graph& graph, bool training) : graph_(graph), training_(training) {}

  // A model input or a weight: it owns a storage.
  FrontendValue root(ir::Value* value);
  // Reads `value` again if its storage was written since it was read (for a
  // list, each element). Throws UnsupportedLowering when it cannot.
  void refresh(FrontendValue& value, const ir::SourceLocation& location);
  // After `node` was lowered: gives the views it made their storage and
  // carries its in-place writes into the storages (weights are assigned the
  // new contents). With `gradEnabled` false (torch.no_grad()), writes are
  // untracked: gradients flow as if they had not happened, as in eager
  // PyTorch, and so do writes through detached views. Returns whether the
  // node wrote. Throws UnsupportedLowering for a write popsim cannot carry.
  bool record(const torch::jit::Node& node, ValueMap& values, bool gradEnabled,
              const ir::SourceLocation& location);
  // The model inputs written in place: (input index, final contents).
  std::vector<std::pair<size_t, ir::Value*>> writtenInputs() const;

private:
  // Throws UnsupportedLowering when input `written` of `node` is written in
  // place while another input reads the same memory at other positions.
  void refuseOverlappingReads(const std::string& op, const torch::jit::Node& node,
                              const ValueMap& values, size_t written) const;
  // Throws UnsupportedLowering when `op` (x.unsqueeze_(0), x.t_()) changes the
  // shape of a model input or weight itself: eager PyTorch would leave the
  // caller's tensor changed.
  void refuseLayoutChangeOfRoot(const std::string& op, const FrontendValue& target,
                                const FrontendValue& result) const;
  void view(const std::string& op, FrontendValue& base, FrontendValue& result) const;
  void write(const std::string& op, const FrontendValue& target, FrontendValue& result,
             bool tracked, const ir::SourceLocation& location);

  ir::Graph& graph_;
  bool training_;
  std::unordered_map<const ir::Value*, std::shared_ptr<Storage>> roots_;
};

} // namespace popsim::frontend
