#pragma once

#include "frontend/value_structure.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace popsim::api {

// A call's IValue inputs as popsim's flat tensor inputs: the tensors inside,
// depth-first, each named after the parameter it is in ("pair[0]",
// "batch['ids']"), and how each input nests them.
struct FlatInputs {
  std::vector<at::Tensor> tensors;
  std::vector<std::string> names;
  std::vector<frontend::ValueStructure> structures;
};

// The end of a message refusing a call's inputs: what to do instead.
extern const char* const kOneProgramPerSignature;

// The example inputs a session compiles for; `parameters` names forward()'s
// parameters. Throws InputError for a value that is not a tensor, or a
// tuple, list or dict (string keys) of them.
FlatInputs flattenExamples(const std::vector<c10::IValue>& values,
                           const std::vector<std::string>& parameters);

// A call's inputs, which nest as the examples did (`compiled`); a dict's
// tensors are taken in the examples' key order. Throws InputError, naming
// the input, for another nesting, length or set of keys.
std::vector<at::Tensor> flattenAs(const std::vector<c10::IValue>& values,
                                  const std::vector<frontend::ValueStructure>& compiled,
                                  const std::vector<std::string>& parameters);

// The model's outputs (flat, depth-first) nested as `structure` says: a
// tensor, or a tuple, list or dict of them, as forward() returns it.
c10::IValue nest(const frontend::ValueStructure& structure, const std::vector<at::Tensor>& tensors);

} // namespace popsim::api
