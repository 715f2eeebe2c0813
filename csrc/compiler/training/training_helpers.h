#pragma once

#include "compiler/training/training_program.h"
#include "ir/graph.h"
#include "ir/state_names.h"

#include <map>
#include <string>
#include <utility>

// Building blocks the parts of a training program share (training_program.cpp,
// loss_scaling.cpp): placed nodes, where parameters live, per-IPU state.
namespace popsim::compiler::training {

inline ir::Node* addNode(ir::Graph& graph, ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                         ir::Attributes attrs, ir::Phase phase, const ir::Placement& where = {}) {
  ir::Node* node = graph.addNode(kind, inputs, std::move(attrs));
  ir::Placement placement = where;
  placement.phase = phase;
  node->setPlacement(placement);
  return node;
}

// Where a parameter lives: the placement of its first user in the forward
// pass (stage assignment has checked that all its users share an IPU).
inline ir::Placement placementOf(const ir::Value* param) {
  for (const ir::Node* user : param->users()) {
    if (user->placement().phase == ir::Phase::Forward) return user->placement();
  }
  return {};
}

inline ir::Placement inPhase(ir::Placement placement, ir::Phase phase) {
  placement.phase = phase;
  return placement;
}

// The state named `name` for use on `ipu`: the first IPU to ask gets `name`
// itself, the others a replica of the same type and kind.
class ReplicatedState {
public:
  ReplicatedState(ir::Graph& graph, std::string name, ir::TensorType type, ir::StateKind kind)
      : graph_(graph), name_(std::move(name)), type_(std::move(type)), kind_(kind) {}
  explicit ReplicatedState(ir::Graph& graph, ir::Value* existing)
      : graph_(graph), name_(existing->name()), type_(existing->type()),
        kind_(existing->stateKind()), existing_(existing) {}

  // The copies made so far, by IPU.
  const std::map<int64_t, ir::Value*>& copies() const { return copies_; }

  ir::Value* on(int64_t ipu, bool* created = nullptr) {
    auto it = copies_.find(ipu);
    if (created != nullptr) *created = it == copies_.end();
    if (it != copies_.end()) return it->second;
    ir::Value* value = nullptr;
    if (copies_.empty()) {
      value = existing_ != nullptr ? existing_ : graph_.addState(name_, type_, kind_);
    } else {
      value = graph_.addState(ir::replicaStateName(name_, ipu), type_, kind_);
    }
    copies_[ipu] = value;
    return value;
  }

private:
  ir::Graph& graph_;
  std::string name_;
  ir::TensorType type_;
  ir::StateKind kind_;
  ir::Value* existing_ = nullptr;
  std::map<int64_t, ir::Value*> copies_;
};

// The attributes of a collective op across the job's replicas, paired by `key`.
inline ir::Attributes collectiveAttrs(const TrainingConfig& config, const std::string& key) {
  return {{"key", key},
          {"replicas", config.replicas},
          {"system_ipus", config.systemIpus},
          {"group_stride", int64_t{0}}};
}

} // namespace popsim::compiler::training
