#pragma once

#include "ir/attributes.h"
#include "ir/op_kind.h"
#include "ir/placement.h"
#include "ir/source_location.h"
#include "ir/value.h"

#include <string>
#include <vector>

namespace popsim::ir {

struct OpSchema;

// One operation: an op kind, input values, output values whose types were
// inferred from the schema at creation, attributes, the user's source line
// and its placement on the simulated machine.
class Node {
public:
  int64_t id() const { return id_; }
  OpKind kind() const { return kind_; }
  std::string_view name() const { return opKindName(kind_); }
  const OpSchema& schema() const;

  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t index) const { return inputs_.at(index); }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(size_t index = 0) const { return outputs_.at(index); }

  const Attributes& attrs() const { return attrs_; }
  // Sets one of the schema's optional attributes, which a marker op (as
  // popsim.MultiConv's partials type) gives the op it marks after the op was
  // made; required ones are set when the node is made, with its types.
  void setOptionalAttribute(const std::string& name, AttrValue value);
  const SourceLocation& location() const { return location_; }
  void setNameScope(std::string scope) { location_.nameScope = std::move(scope); }
  // "encoder/layer_norm" in name scope "encoder", else the op kind's name.
  std::string scopedName() const;
  const Placement& placement() const { return placement_; }
  void setPlacement(Placement placement) { placement_ = std::move(placement); }

  // The share of its IPU's memory a matmul or convolution may use for its
  // temporaries, set by the user for this op (popsim.set_available_memory);
  // 0 when the IPU's availableMemoryProportion applies.
  double availableMemoryProportion() const { return availableMemoryProportion_; }
  void setAvailableMemoryProportion(double proportion) { availableMemoryProportion_ = proportion; }

  // Whether the node writes weights or state in place (see OpSchema).
  bool hasSideEffects() const;

  // "convolution at model.py:12": how errors refer to a node.
  std::string describe() const;

private:
  friend class Graph;
  Node(int64_t id, OpKind kind, Attributes attrs, SourceLocation location)
      : id_(id), kind_(kind), attrs_(std::move(attrs)), location_(std::move(location)) {}

  int64_t id_;
  OpKind kind_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  Attributes attrs_;
  SourceLocation location_;
  Placement placement_;
  double availableMemoryProportion_ = 0.0;
};

} // namespace popsim::ir
