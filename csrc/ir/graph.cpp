#include "ir/graph.h"

#include "common/check.h"
#include "common/float16.h"
#include "ir/op_schema.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace popsim::ir {

Value* Graph::newValue(TensorType type, ValueRole role, const std::string& name) {
  values_.push_back(std::unique_ptr<Value>(
      new Value(static_cast<int64_t>(values_.size()), std::move(type), role, name)));
  return values_.back().get();
}

Value* Graph::addInput(const std::string& name, TensorType type) {
  Value* value = newValue(std::move(type), ValueRole::Input, name);
  inputs_.push_back(value);
  return value;
}

Value* Graph::addWeight(const std::string& name, TensorType type, bool trainable) {
  POPSIM_ASSERT(findWeight(name) == nullptr, "weight '", name, "' added twice.");
  Value* value = newValue(std::move(type), ValueRole::Weight, name);
  value->trainable_ = trainable;
  weights_.push_back(value);
  return value;
}

Value* Graph::replaceWeight(Value* weight, TensorType type) {
  const auto slot = std::find(weights_.begin(), weights_.end(), weight);
  POPSIM_ASSERT(slot != weights_.end(), "replaceWeight: '", weight->name(), "' is not a weight.");
  Value* value = newValue(std::move(type), ValueRole::Weight, weight->name());
  value->trainable_ = weight->trainable();
  *slot = value;
  return value;
}

Value* Graph::addState(const std::string& name, TensorType type, StateKind kind) {
  POPSIM_ASSERT(findState(name) == nullptr, "state '", name, "' added twice.");
  Value* value = newValue(std::move(type), ValueRole::State, name);
  value->stateKind_ = kind;
  states_.push_back(value);
  return value;
}

Value* Graph::addConstant(TensorType type, std::vector<uint8_t> data, const std::string& name) {
  POPSIM_ASSERT(data.size() == type.storageBytes(), "constant ", type.str(), " given ", data.size(),
                " bytes.");
  Value* value = newValue(std::move(type), ValueRole::Constant, name);
  value->constantData_ = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  constants_.push_back(value);
  return value;
}

Value* Graph::addScalarConstant(float scalar, DType dtype) {
  POPSIM_ASSERT(isFloat(dtype), "a scalar constant of ", dtypeName(dtype), ".");
  if (dtype == DType::Float16) scalar = roundToHalf(scalar); // held in a float32 carrier
  std::vector<uint8_t> bytes(sizeof(float));
  std::memcpy(bytes.data(), &scalar, sizeof(float));
  return addConstant({dtype, {}}, std::move(bytes));
}

Node* Graph::addNode(OpKind kind, const std::vector<Value*>& inputs, Attributes attrs,
                     SourceLocation location) {
  std::vector<TensorType> inputTypes;
  inputTypes.reserve(inputs.size());
  for (const Value* input : inputs) {
    POPSIM_ASSERT(input != nullptr && owns(input), "node ", opKindName(kind),
                  " given a value from another graph.");
    inputTypes.push_back(input->type());
  }
  std::vector<TensorType> outputTypes;
  try {
    outputTypes = inferOutputTypes(kind, inputTypes, attrs);
  } catch (const CoreError& error) {
    const std::string where = location.known() ? " (at " + location.str() + ")" : "";
    throwError(error.kind(), error.what() + where);
  }
  auto position = nodes_.end();
  if (insertBefore_ != nullptr) {
    position = std::find_if(nodes_.begin(), nodes_.end(), [this](const auto& candidate) {
      return candidate.get() == insertBefore_;
    });
    POPSIM_ASSERT(position != nodes_.end(), "the insertion point is not a node of this graph.");
  }
  Node* node =
      nodes_
          .insert(position, std::unique_ptr<Node>(new Node(nextNodeId_++, kind, std::move(attrs),
                                                           std::move(location))))
          ->get();
  node->inputs_ = inputs;
  for (Value* input : inputs) {
    input->users_.push_back(node);
  }
  for (TensorType& type : outputTypes) {
    Value* output = newValue(std::move(type), ValueRole::Computed, "");
    output->producer_ = node;
    node->outputs_.push_back(output);
  }
  return node;
}

Value* Graph::apply(OpKind kind, const std::vector<Value*>& inputs, Attributes attrs,
                    SourceLocation location) {
  Node* node = addNode(kind, inputs, std::move(attrs), std::move(location));
  POPSIM_ASSERT(node->outputs().size() == 1, "apply() used on multi-output op ", node->name(), ".");
  return node->output();
}

void Graph::addOutput(Value* value) {
  POPSIM_ASSERT(value != nullptr && owns(value), "graph output from another graph.");
  outputs_.insert(outputs_.end() - static_cast<std::ptrdiff_t>(inputUpdates_.size()), value);
}

void Graph::setOutput(size_t index, Value* value) {
  POPSIM_ASSERT(index < outputs_.size() && owns(value), "bad graph output ", index, ".");
  outputs_[index] = value;
}

void Graph::setOutputs(const std::vector<Value*>& values) {
  for (Value* value : values) {
    POPSIM_ASSERT(owns(value), "graph output from another graph.");
  }
  outputs_ = values;
  inputUpdates_.clear();
  outputOverlaps_.clear(); // other outputs now
}

void Graph::setInputOverlap(size_t inputIndex, HostOverlap overlap) {
  POPSIM_ASSERT(inputIndex < inputs_.size(), "bad graph input ", inputIndex, ".");
  inputOverlaps_[inputIndex] = overlap;
}

void Graph::setInputStreamedElementBytes(size_t inputIndex, uint64_t bytes) {
  POPSIM_ASSERT(inputIndex < inputs_.size(), "bad graph input ", inputIndex, ".");
  POPSIM_ASSERT(bytes <= elementSize(inputs_[inputIndex]->type().dtype),
                "an input streams at most its type's bytes per element.");
  if (bytes == 0) {
    inputElementBytes_.erase(inputIndex);
  } else {
    inputElementBytes_[inputIndex] = bytes;
  }
}

uint64_t Graph::inputStreamedElementBytes(size_t inputIndex) const {
  auto it = inputElementBytes_.find(inputIndex);
  return it != inputElementBytes_.end() ? it->second : 0;
}

uint64_t Graph::inputStreamedBytes(size_t inputIndex) const {
  const TensorType& type = inputs_.at(inputIndex)->type();
  const uint64_t narrow = inputStreamedElementBytes(inputIndex);
  return narrow != 0 ? static_cast<uint64_t>(type.numel()) * narrow : type.bytes();
}

void Graph::setOutputOverlap(size_t outputIndex, HostOverlap overlap) {
  POPSIM_ASSERT(outputIndex < outputs_.size(), "bad graph output ", outputIndex, ".");
  outputOverlaps_[outputIndex] = overlap;
}

HostOverlap Graph::inputOverlap(size_t inputIndex) const {
  auto it = inputOverlaps_.find(inputIndex);
  return it != inputOverlaps_.end() ? it->second : HostOverlap::None;
}

HostOverlap Graph::outputOverlap(size_t outputIndex) const {
  auto it = outputOverlaps_.find(outputIndex);
  return it != outputOverlaps_.end() ? it->second : HostOverlap::None;
}

bool Graph::overlapsHostIo() const {
  for (const auto* overlaps : {&inputOverlaps_, &outputOverlaps_}) {
    for (const auto& [index, overlap] : *overlaps) {
      if (overlap != HostOverlap::None) return true;
    }
  }
  return false;
}

void Graph::addInputUpdate(size_t inputIndex, Value* finalValue) {
  POPSIM_ASSERT(inputIndex < inputs_.size() && owns(finalValue), "bad input update ", inputIndex,
                ".");
  outputs_.push_back(finalValue);
  inputUpdates_.push_back(inputIndex);
}

Value* Graph::findWeight(const std::string& name) const {
  for (Value* weight : weights_) {
    if (weight->name() == name) {
      return weight;
    }
  }
  return nullptr;
}

Value* Graph::findState(const std::string& name) const {
  for (Value* state : states_) {
    if (state->name() == name) {
      return state;
    }
  }
  return nullptr;
}

void Graph::setLoss(Value* loss) {
  POPSIM_ASSERT(loss == nullptr || owns(loss), "loss from another graph.");
  loss_ = loss;
}

Value* Graph::gradientOf(const Value* parameter) const {
  for (const Gradient& entry : gradients_) {
    if (entry.parameter == parameter) return entry.gradient;
  }
  return nullptr;
}

void Graph::setGradient(Value* parameter, Value* gradient) {
  POPSIM_ASSERT(owns(parameter) && owns(gradient), "a gradient map entry from another graph.");
  for (Gradient& entry : gradients_) {
    if (entry.parameter == parameter) {
      entry.gradient = gradient;
      return;
    }
  }
  gradients_.push_back({parameter, gradient});
}

void Graph::clearGradients() {
  gradients_.clear();
  gradientSeed_ = nullptr;
}

void Graph::setGradientSeed(Value* seed) {
  POPSIM_ASSERT(seed == nullptr || owns(seed), "a gradient seed from another graph.");
  gradientSeed_ = seed;
}

bool Graph::holds(const Value* value) const {
  if (value == loss_ || value == gradientSeed_) return value != nullptr;
  if (std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end()) return true;
  return std::any_of(gradients_.begin(), gradients_.end(), [&](const Gradient& entry) {
    return entry.parameter == value || entry.gradient == value;
  });
}

void Graph::replaceAllUsesWith(Value* from, Value* to) {
  POPSIM_ASSERT(from->type() == to->type(), "replacing ", from->type().str(), " with ",
                to->type().str(), ".");
  for (Node* user : from->users_) {
    for (Value*& input : user->inputs_) {
      if (input == from) {
        input = to;
        to->users_.push_back(user);
      }
    }
  }
  from->users_.clear();
  std::replace(outputs_.begin(), outputs_.end(), from, to);
  if (loss_ == from) {
    loss_ = to;
  }
  if (gradientSeed_ == from) {
    gradientSeed_ = to;
  }
  for (Gradient& entry : gradients_) {
    if (entry.gradient == from) entry.gradient = to;
  }
}

void Graph::replaceInput(Node* node, size_t index, Value* value) {
  Value* old = node->inputs_.at(index);
  POPSIM_ASSERT(owns(value), "replacing input ", index, " of ", node->describe(),
                " with a value of another graph.");
  auto& users = old->users_;
  users.erase(std::find(users.begin(), users.end(), node));
  node->inputs_[index] = value;
  value->users_.push_back(node);
}

void Graph::detachNode(Node* node) {
  for (Value* input : node->inputs_) {
    auto& users = input->users_;
    auto it = std::find(users.begin(), users.end(), node);
    if (it != users.end()) {
      users.erase(it);
    }
  }
  node->inputs_.clear();
}

size_t Graph::removeUnusedLeaves() {
  auto unused = [this](Value* value) { return value->users().empty() && !holds(value); };
  const size_t before = weights_.size() + states_.size() + constants_.size();
  weights_.erase(std::remove_if(weights_.begin(), weights_.end(), unused), weights_.end());
  states_.erase(std::remove_if(states_.begin(), states_.end(), unused), states_.end());
  constants_.erase(std::remove_if(constants_.begin(), constants_.end(), unused), constants_.end());
  return before - weights_.size() - states_.size() - constants_.size();
}

bool Graph::owns(const Value* value) const {
  return value != nullptr && value->id() >= 0 &&
         static_cast<size_t>(value->id()) < values_.size() &&
         values_[static_cast<size_t>(value->id())].get() == value;
}

const BlockAnnotation* Graph::findBlock(const std::string& name) const {
  for (const BlockAnnotation& block : blocks_) {
    if (block.name == name) return &block;
  }
  return nullptr;
}

void Graph::addBlock(BlockAnnotation block) {
  POPSIM_ASSERT(findBlock(block.name) == nullptr, "block '", block.name, "' added twice.");
  blocks_.push_back(std::move(block));
}

void Graph::reorderNodes(const std::vector<const Node*>& order) {
  POPSIM_ASSERT(order.size() == nodes_.size(), "reorderNodes given ", order.size(),
                " nodes for a graph of ", nodes_.size(), ".");
  std::unordered_map<const Node*, std::unique_ptr<Node>> owned;
  for (auto& node : nodes_) {
    owned.emplace(node.get(), std::move(node));
  }
  nodes_.clear();
  for (const Node* node : order) {
    auto it = owned.find(node);
    POPSIM_ASSERT(it != owned.end() && it->second != nullptr,
                  "reorderNodes given a node twice or one of another graph.");
    nodes_.push_back(std::move(it->second));
  }
}

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>();
  std::unordered_map<const Value*, Value*> map;
  for (const Value* input : inputs_) {
    map[input] = copy->addInput(input->name(), input->type());
  }
  for (const Value* weight : weights_) {
    map[weight] = copy->addWeight(weight->name(), weight->type(), weight->trainable());
  }
  for (const Value* state : states_) {
    map[state] = copy->addState(state->name(), state->type(), state->stateKind());
  }
  for (const Value* constant : constants_) {
    Value* cloned = copy->newValue(constant->type(), ValueRole::Constant, constant->name());
    cloned->constantData_ = constant->constantData_;
    copy->constants_.push_back(cloned);
    map[constant] = cloned;
  }
  for (const auto& node : nodes_) {
    copy->nodes_.push_back(std::unique_ptr<Node>(
        new Node(copy->nextNodeId_++, node->kind(), node->attrs(), node->location())));
    Node* cloned = copy->nodes_.back().get();
    cloned->placement_ = node->placement();
    cloned->availableMemoryProportion_ = node->availableMemoryProportion();
    for (const Value* input : node->inputs()) {
      Value* mapped = map.at(input);
      cloned->inputs_.push_back(mapped);
      mapped->users_.push_back(cloned);
    }
    for (const Value* output : node->outputs()) {
      Value* mapped = copy->newValue(output->type(), ValueRole::Computed, output->name());
      mapped->producer_ = cloned;
      cloned->outputs_.push_back(mapped);
      map[output] = mapped;
    }
  }
  for (const Value* output : outputs_) {
    copy->outputs_.push_back(map.at(output));
  }
  copy->inputUpdates_ = inputUpdates_;
  copy->inputOverlaps_ = inputOverlaps_;
  copy->inputElementBytes_ = inputElementBytes_;
  copy->outputOverlaps_ = outputOverlaps_;
  copy->loss_ = loss_ != nullptr ? map.at(loss_) : nullptr;
  for (const Gradient& entry : gradients_) {
    copy->gradients_.push_back({map.at(entry.parameter), map.at(entry.gradient)});
  }
  copy->gradientSeed_ = gradientSeed_ != nullptr ? map.at(gradientSeed_) : nullptr;
  copy->blocks_ = blocks_;
  return copy;
}

} // namespace popsim::ir
