#pragma once

#include "ir/attributes.h"
#include "ir/op_kind.h"
#include "ir/tensor_type.h"

#include <string>
#include <vector>

namespace popsim::ir {

struct AttrSpec {
  std::string name;
  AttrType type;
};

// Computes an op's output types from its input types and attributes. Throws
// popsim::Error (Compilation) with a message naming the offending input and
// the expected and actual sizes; the caller prefixes the op and location.
using InferTypesFn = std::vector<TensorType> (*)(const std::vector<TensorType>& inputs,
                                                 const Attributes& attrs);

// The contract of one op: how many inputs, which attributes, what it produces.
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

  std::string_view name() const { return opKindName(kind); }
  std::string inputName(size_t index) const;
  bool hasSideEffects() const { return !mutatedInputs.empty(); }
};

const OpSchema& opSchema(OpKind kind);

// Ops whose output shares its input's storage (OpSchema::view).
inline bool isViewOp(OpKind kind) { return opSchema(kind).view; }

// Checks arity and attributes against the schema, then infers output types.
// Errors read "<op>: <problem>"; callers add the source location.
std::vector<TensorType> inferOutputTypes(OpKind kind, const std::vector<TensorType>& inputs,
                                         const Attributes& attrs);

} // namespace popsim::ir
