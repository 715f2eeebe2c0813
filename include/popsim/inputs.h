#pragma once

// A call's inputs as a module's forward() takes them.

#include <ATen/core/ivalue.h>

#include <initializer_list>
#include <utility>
#include <vector>

namespace popsim {

/// The inputs of a session's call, one per parameter of the module's
/// forward() after `self`: tensors, or tuples, lists and dicts (string keys)
/// of tensors, nested as forward() types them. Made from tensors
/// (`session.run({images, labels})`, or a std::vector<at::Tensor>) or from
/// IValues, as torch::jit::Module::forward takes them (a
/// std::vector<c10::IValue>, that is a torch::jit::Stack):
///
///   std::vector<c10::IValue> inputs{c10::ivalue::Tuple::create({a, b}), mask};
///   c10::IValue out = session.forward(inputs);
///
/// popsim compiles the tensors inside, each with its dimension 0 holding the
/// call's micro-batches; a call's inputs nest as the example inputs did (a
/// dict's keys in any order).
class Inputs {
public:
  Inputs() = default;
  Inputs(std::initializer_list<at::Tensor> tensors) : values_(tensors.begin(), tensors.end()) {}
  Inputs(const std::vector<at::Tensor>& tensors) : values_(tensors.begin(), tensors.end()) {}
  Inputs(std::initializer_list<c10::IValue> values) : values_(values) {}
  Inputs(std::vector<c10::IValue> values) : values_(std::move(values)) {}

  const std::vector<c10::IValue>& values() const { return values_; }

private:
  std::vector<c10::IValue> values_;
};

} // namespace popsim
