#pragma once

#include "compiler/training/training_config.h"
#include "ir/graph.h"
#include "ir/state_names.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

// Building blocks the training program's passes share: placed nodes, where
// parameters live, which parameters are trained and sharded, per-IPU state.
namespace popsim::compiler::training {

inline ir::Node* addNode(ir::Graph& graph, ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                         ir::Attributes attrs, ir::Phase phase, const ir::Placement& where = {}) {
  ir::Node* node = graph.addNode(kind, inputs, std::move(attrs));
  ir::Placement placement = where.forAddedOp(); // where it runs, not how `where`'s op computes
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

// Gradient accumulators and optimizer state are float32 whatever the
// parameter's dtype, as PopTorch's accum_type and momentum types default to.
inline ir::TensorType float32Like(const ir::TensorType& type) {
  return {ir::DType::Float32, type.shape};
}

inline bool listed(const std::vector<std::string>& names, const ir::Value* param) {
  return std::find(names.begin(), names.end(), param->name()) != names.end();
}

// Whether the parameter's optimizer state (and update) is sharded over the
// replicas, and whether the weight itself is stored as this replica's shard.
inline bool isSharded(const TrainingConfig& config, const ir::Value* param) {
  return config.replicas > 1 &&
         (listed(config.shardedParameters, param) || listed(config.shardedWeights, param));
}
inline bool isStoredSharded(const TrainingConfig& config, const ir::Value* param) {
  return config.replicas > 1 && listed(config.shardedWeights, param);
}

// The weights the groups train, in group order, each with its group: those
// the model's forward pass uses and that are trainable (a buffer, an unused
// or a twice-listed name is left out).
inline std::vector<std::pair<ir::Value*, size_t>> trainedParameters(const ir::Graph& graph,
                                                                    const TrainingConfig& config) {
  std::vector<std::pair<ir::Value*, size_t>> params;
  for (size_t g = 0; g < config.groups.size(); ++g) {
    for (const std::string& name : config.groups[g].parameters) {
      ir::Value* weight = graph.findWeight(name);
      const bool listedBefore = std::any_of(params.begin(), params.end(),
                                            [&](const auto& p) { return p.first == weight; });
      if (weight == nullptr || !weight->trainable() || listedBefore) continue;
      params.emplace_back(weight, g);
    }
  }
  return params;
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

// counter = counter + 1, as an update of an i64 state scalar.
inline void increment(ir::Graph& graph, ir::Value* counter, const ir::Placement& where) {
  ir::Value* next = addNode(graph, ir::OpKind::Affine, {counter}, {{"scale", 1.0}, {"shift", 1.0}},
                            where.phase, where)
                        ->output();
  addNode(graph, ir::OpKind::Assign, {counter, next}, {}, where.phase, where);
}

} // namespace popsim::compiler::training
