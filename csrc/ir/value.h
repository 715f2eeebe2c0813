#pragma once

#include "ir/tensor_type.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace popsim::ir {

class Node;

// What a value is. Inputs arrive from the host each iteration, weights (the
// model's parameters and buffers) and state (popsim's own variables) live on
// the device across calls, constants are baked into the program, and
// computed values are produced by nodes.
enum class ValueRole { Input, Weight, State, Constant, Computed };
const char* valueRoleName(ValueRole role);

// What a state variable holds, which decides its memory category.
enum class StateKind {
  Accumulator, // a weight's gradient summed over the micro-batches of a step
  Optimizer,   // optimizer state, hyper-parameters and step counts
  Random,      // the counter that seeds dropout masks
};
const char* stateKindName(StateKind kind);

// An SSA value: one tensor with a static type. Created and owned by a Graph,
// which also keeps the producer and user links up to date.
class Value {
public:
  int64_t id() const { return id_; }
  const TensorType& type() const { return type_; }
  ValueRole role() const { return role_; }
  // The user-facing name: input names, parameter paths for weights.
  const std::string& name() const { return name_; }
  // The node computing this value; null for inputs, weights and constants.
  Node* producer() const { return producer_; }
  // Each use by a node appears once per operand position.
  const std::vector<Node*>& users() const { return users_; }
  // Whether a weight is a trainable parameter (false for buffers such as
  // batch-norm running statistics).
  bool trainable() const { return trainable_; }
  // Weights and state keep their bytes across calls and can be written by
  // side-effecting ops.
  bool isVariable() const { return role_ == ValueRole::Weight || role_ == ValueRole::State; }
  StateKind stateKind() const { return stateKind_; }
  // The bytes of a constant, row-major, type().bytes() long.
  const std::vector<uint8_t>& constantData() const { return *constantData_; }

private:
  friend class Graph;
  Value(int64_t id, TensorType type, ValueRole role, std::string name)
      : id_(id), type_(std::move(type)), role_(role), name_(std::move(name)) {}

  int64_t id_;
  TensorType type_;
  ValueRole role_;
  std::string name_;
  Node* producer_ = nullptr;
  std::vector<Node*> users_;
  bool trainable_ = false;
  StateKind stateKind_ = StateKind::Optimizer;
  std::shared_ptr<const std::vector<uint8_t>> constantData_;
};

} // namespace popsim::ir
