#include "ir/ops/op_registry.h"

namespace popsim::ir {

void OpRegistry::add(OpKind kind, int minInputs, int maxInputs, std::vector<std::string> inputNames,
                     std::vector<AttrSpec> attrs, InferTypesFn inferTypes) {
  OpSchema& schema = table_.at(static_cast<size_t>(kind));
  schema.minInputs = minInputs;
  schema.maxInputs = maxInputs;
  schema.inputNames = std::move(inputNames);
  schema.attrs = std::move(attrs);
  schema.inferTypes = inferTypes;
}

void OpRegistry::setMutatedInputs(OpKind kind, std::vector<size_t> inputs) {
  table_.at(static_cast<size_t>(kind)).mutatedInputs = std::move(inputs);
}

void OpRegistry::setView(OpKind kind) { table_.at(static_cast<size_t>(kind)).view = true; }

void OpRegistry::setGradient(OpKind kind, GradientRule rule) {
  table_.at(static_cast<size_t>(kind)).gradient = rule;
}

void OpRegistry::setWork(OpKind kind, WorkRule rule) {
  table_.at(static_cast<size_t>(kind)).work = rule;
}

void OpRegistry::setPlannedTemporaries(OpKind kind) {
  table_.at(static_cast<size_t>(kind)).plannedTemporaries = true;
}

void OpRegistry::setSelectsInputValues(OpKind kind, SelectsInputValuesRule rule) {
  table_.at(static_cast<size_t>(kind)).selectsInputValues =
      rule != nullptr ? rule : [](const Node&) { return true; };
}

} // namespace popsim::ir
