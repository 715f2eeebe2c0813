#pragma once

#include "ir/host_overlap.h"
#include "ir/node.h"
#include "ir/value.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace popsim::ir {

// A pipeline block the user annotated (popsim.Block, BeginBlock or
// BlockFunction): its id, the IPU it asked for (-1: none) and where the
// model first entered it.
struct BlockAnnotation {
  std::string name;
  int64_t ipu = -1;
  SourceLocation location;
};

// A program: inputs, weights and constants, an ordered list of nodes (a valid
// schedule: every value is defined before it is used) and the outputs.
// The graph owns all values and nodes and keeps use-def links consistent.
class Graph {
public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Value* addInput(const std::string& name, TensorType type);
  // Weight names are unique (they are parameter paths such as "fc1.weight").
  Value* addWeight(const std::string& name, TensorType type, bool trainable);
  // A new weight of `type` that takes `weight`'s name, place and trainability;
  // `weight` stops being one of the graph's weights (the caller then moves
  // its uses elsewhere).
  Value* replaceWeight(Value* weight, TensorType type);
  // popsim's own device variables (accumulators, optimizer state, counters);
  // names are unique among states.
  Value* addState(const std::string& name, TensorType type, StateKind kind);
  Value* addConstant(TensorType type, std::vector<uint8_t> data, const std::string& name = "");
  // A 0-d float constant (rounded to float16 for a Float16 one).
  Value* addScalarConstant(float value, DType dtype = DType::Float32);

  // Adds a node at the insertion point (the end unless set); output types come
  // from the op schema. Type errors read "<op> at <location>: <problem>".
  Node* addNode(OpKind kind, const std::vector<Value*>& inputs, Attributes attrs = {},
                SourceLocation location = {});
  // addNode for single-output ops, returning the output.
  Value* apply(OpKind kind, const std::vector<Value*>& inputs, Attributes attrs = {},
               SourceLocation location = {});

  // New nodes go before `node` (null: at the end) until this is set again.
  void setInsertionPoint(const Node* node) { insertBefore_ = node; }

  // Adds an output after the model's outputs so far, before any input
  // updates (which stay the last outputs).
  void addOutput(Value* value);
  void setOutput(size_t index, Value* value);
  // Replaces all outputs (and forgets the input updates among them).
  void setOutputs(const std::vector<Value*>& values);
  // An output carrying the final value of an input the model modifies in
  // place (x += 1 in forward), for the host to copy back into the caller's
  // tensor as eager PyTorch would. Input updates follow the model's outputs.
  void addInputUpdate(size_t inputIndex, Value* finalValue);
  // The input index of each input update, in order; they are the last
  // inputUpdates().size() outputs.
  const std::vector<size_t>& inputUpdates() const { return inputUpdates_; }
  bool isInputUpdate(size_t outputIndex) const {
    return outputIndex + inputUpdates_.size() >= outputs_.size();
  }

  // How each model input and output streams from and to the host
  // (HostOverlap::None unless set); outputs by index among the outputs.
  void setInputOverlap(size_t inputIndex, HostOverlap overlap);
  void setOutputOverlap(size_t outputIndex, HostOverlap overlap);
  HostOverlap inputOverlap(size_t inputIndex) const;
  // Bytes per element an input crosses from the host with, when the host
  // streams it narrower than its type (8-bit images widened to int32 on the
  // device: 1); 0 (the default) for its type's own.
  void setInputStreamedElementBytes(size_t inputIndex, uint64_t bytes);
  uint64_t inputStreamedElementBytes(size_t inputIndex) const;
  // The bytes one call of the input streams from the host.
  uint64_t inputStreamedBytes(size_t inputIndex) const;
  HostOverlap outputOverlap(size_t outputIndex) const;
  bool overlapsHostIo() const;

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& weights() const { return weights_; }
  const std::vector<Value*>& states() const { return states_; }
  const std::vector<Value*>& constants() const { return constants_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  Value* findWeight(const std::string& name) const;
  Value* findState(const std::string& name) const;

  // The scalar a training program minimises (null for inference).
  Value* loss() const { return loss_; }
  void setLoss(Value* loss);

  // The training program's gradient map, which its passes share while they
  // build the step: each trained parameter (a weight) with the gradient the
  // next pass works on (autodiff's, then accumulated, summed over replicas,
  // unscaled, clipped), in the order the parameters were added; and the
  // seed the backward pass started from (d loss / d loss). The optimizer
  // step consumes the map and clears it, so a finished program has none.
  struct Gradient {
    Value* parameter = nullptr;
    Value* gradient = nullptr;
  };
  const std::vector<Gradient>& gradients() const { return gradients_; }
  // The gradient `parameter` has in the map (null: none).
  Value* gradientOf(const Value* parameter) const;
  // Adds the parameter at the end, or replaces its gradient in place.
  void setGradient(Value* parameter, Value* gradient);
  void clearGradients();
  Value* gradientSeed() const { return gradientSeed_; }
  void setGradientSeed(Value* seed);

  // Blocks in the order the model first enters them (empty without
  // annotations). Nodes name their block in their placement.
  const std::vector<BlockAnnotation>& blocks() const { return blocks_; }
  const BlockAnnotation* findBlock(const std::string& name) const;
  void addBlock(BlockAnnotation block);

  // Puts the nodes in the given order, which must be a permutation of
  // nodes() (the caller keeps definitions before uses; the verifier checks).
  void reorderNodes(const std::vector<const Node*>& order);

  // Redirects every use of `from` (including graph outputs) to `to`.
  void replaceAllUsesWith(Value* from, Value* to);
  // Makes `value` operand `index` of `node`. The node's output types are not
  // re-inferred: the caller keeps them valid (the verifier checks).
  void replaceInput(Node* node, size_t index, Value* value);
  // Removes nodes whose outputs are unused; `remove(node)` decides which.
  template <typename Predicate> size_t removeNodesIf(Predicate remove);
  // Drops weights, state and constants that no node or output uses.
  size_t removeUnusedLeaves();

  // Whether the graph itself holds `value` beyond its users: an output, the
  // loss, or a gradient map entry's parameter, gradient or seed.
  bool holds(const Value* value) const;

  // Whether `value` belongs to this graph (used by the verifier).
  bool owns(const Value* value) const;
  size_t numValues() const { return values_.size(); }

  std::unique_ptr<Graph> clone() const;

private:
  Value* newValue(TensorType type, ValueRole role, const std::string& name);
  void detachNode(Node* node);

  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> weights_;
  std::vector<Value*> states_;
  std::vector<Value*> constants_;
  std::vector<Value*> outputs_;
  std::vector<size_t> inputUpdates_;
  std::map<size_t, HostOverlap> inputOverlaps_;
  std::map<size_t, uint64_t> inputElementBytes_;
  std::map<size_t, HostOverlap> outputOverlaps_;
  std::vector<BlockAnnotation> blocks_;
  Value* loss_ = nullptr;
  std::vector<Gradient> gradients_;
  Value* gradientSeed_ = nullptr;
  const Node* insertBefore_ = nullptr;
  int64_t nextNodeId_ = 0;
};

template <typename Predicate> size_t Graph::removeNodesIf(Predicate remove) {
  size_t removed = 0;
  std::vector<std::unique_ptr<Node>> kept;
  kept.reserve(nodes_.size());
  // Walk backwards so that removing a node can free its producers' outputs.
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node* node = it->get();
    bool unused = !node->hasSideEffects();
    for (const Value* output : node->outputs()) {
      unused = unused && output->users().empty() && !holds(output);
    }
    if (unused && remove(*node)) {
      if (node == insertBefore_) {
        insertBefore_ = nullptr;
      }
      detachNode(node);
      ++removed;
    } else {
      kept.push_back(std::move(*it));
    }
  }
  nodes_.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  return removed;
}

} // namespace popsim::ir
