#pragma once

#include "ir/attributes.h"
#include "ir/op_kind.h"
#include "ir/op_work.h"
#include "ir/tensor_type.h"

#include <string>
#include <vector>

namespace popsim::ir {

struct AttrSpec {
  std::string name;
  AttrType type;
  // An optional attribute may be absent: a setting the user gave some ops
  // only (a convolution's partials type, from popsim.MultiConv).
  bool optional = false;
};

// Computes an op's output types from its input types and attributes. Throws
// popsim::CoreError (Compilation) with a message naming the offending input and
// the expected and actual sizes; the caller prefixes the op and location.
using InferTypesFn = std::vector<TensorType> (*)(const std::vector<TensorType>& inputs,
                                                 const Attributes& attrs);

class GradientBuilder;
class Node;
class Value;

// The gradient of each input of the forward node `builder` differentiates
// (null where not needed or not differentiable) from the gradients of its
// outputs (null where an output does not reach the loss). `needed[i]` says
// whether input i needs one. Rules follow PyTorch's derivative formulas.
using GradientRule = std::vector<Value*> (*)(GradientBuilder& builder,
                                             const std::vector<Value*>& outputGrads,
                                             const std::vector<bool>& needed);

// What a node of the op does on the IPU (ir/op_work.h), for the cost model.
using WorkRule = OpWork (*)(const Node& node);

// Whether every output element of a node of the op is one of its input
// elements, its negation or zero (a ReLU, a max pooling, a slice), which may
// depend on the node's attributes.
using SelectsInputValuesRule = bool (*)(const Node& node);

// Everything popsim knows of one op, declared by its family's file
// (ir/ops/*.cpp): how many inputs, which attributes, what it produces, what
// it writes, its gradient, its work and whether its temporaries are planned.
struct OpSchema {
  OpKind kind;
  int minInputs = 1;
  int maxInputs = 1;                   // -1: variadic
  std::vector<std::string> inputNames; // for messages: "input", "weight", ...
  std::vector<AttrSpec> attrs;         // all required
  InferTypesFn inferTypes = nullptr;
  // Inputs the op writes in place (weights or state). Such ops have side
  // effects: they have no outputs and dead code elimination keeps them.
  std::vector<size_t> mutatedInputs;
  // The output is a view of input 0: the same bytes (no copy, no kernel, no
  // cycles). The memory plan, the kernel factory and the cost model ask this.
  bool view = false;
  // Its gradient rule (autodiff); null when popsim cannot differentiate it.
  GradientRule gradient = nullptr;
  // Its work on the IPU; every op but a view declares one.
  WorkRule work = nullptr;
  // A matmul or convolution: its operands are gathered onto the tiles that
  // use them and its partial sums kept, temporaries the memory plan sizes
  // under availableMemoryProportion (memory/op_temporaries.h).
  bool plannedTemporaries = false;
  // Whether the op only selects its inputs' values (null: never). Its results
  // are then exact in the inputs' type: float16 inputs give float16 values,
  // which the kernel factory does not round again.
  SelectsInputValuesRule selectsInputValues = nullptr;

  std::string_view name() const { return opKindName(kind); }
  std::string inputName(size_t index) const;
  bool hasSideEffects() const { return !mutatedInputs.empty(); }
};

const OpSchema& opSchema(OpKind kind);

// Ops whose output shares its input's storage (OpSchema::view).
inline bool isViewOp(OpKind kind) { return opSchema(kind).view; }
// Whether the simulated IPU does nothing for `node`: a view, or a cast
// between a float16 value and the float32 copy popsim computes a
// float16-on-the-IPU op in (Placement::float16OnIpu; float16 <-> float32
// only), whose bytes the IPU does not hold twice.
bool isFreeOnIpu(const Node& node);
// OpSchema::selectsInputValues for `node`.
bool selectsInputValues(const Node& node);

// Checks arity and attributes against the schema, then infers output types.
// Errors read "<op>: <problem>"; callers add the source location.
std::vector<TensorType> inferOutputTypes(OpKind kind, const std::vector<TensorType>& inputs,
                                         const Attributes& attrs);

} // namespace popsim::ir
