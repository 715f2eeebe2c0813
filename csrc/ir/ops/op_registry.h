#pragma once

#include "ir/node.h"
#include "ir/op_schema.h"

#include <array>

namespace popsim::ir {

// Fills the op table; each ops/*.cpp file registers one family of ops.
class OpRegistry {
public:
  explicit OpRegistry(std::array<OpSchema, kNumOpKinds>& table) : table_(table) {}
  void add(OpKind kind, int minInputs, int maxInputs, std::vector<std::string> inputNames,
           std::vector<AttrSpec> attrs, InferTypesFn inferTypes);
  // Declares inputs an op writes in place (see OpSchema::mutatedInputs).
  void setMutatedInputs(OpKind kind, std::vector<size_t> inputs);
  // Declares the op a view of its first input (see OpSchema::view).
  void setView(OpKind kind);
  // Declares the op's gradient rule, work rule and planned temporaries (see
  // OpSchema).
  void setGradient(OpKind kind, GradientRule rule);
  void setWork(OpKind kind, WorkRule rule);
  void setPlannedTemporaries(OpKind kind);
  // Declares that the op only selects its inputs' values: always, or as
  // `rule` says for a node (see OpSchema::selectsInputValues).
  void setSelectsInputValues(OpKind kind, SelectsInputValuesRule rule = nullptr);

private:
  std::array<OpSchema, kNumOpKinds>& table_;
};

namespace ops {
void registerConvolutionOps(OpRegistry& registry);
void registerMatMulOps(OpRegistry& registry);
void registerElementwiseOps(OpRegistry& registry);
void registerPointwiseOps(OpRegistry& registry);
void registerBinaryPointwiseOps(OpRegistry& registry);
void registerExtremumOps(OpRegistry& registry);
void registerScanOps(OpRegistry& registry);
void registerProductOps(OpRegistry& registry);
void registerCtcLossOps(OpRegistry& registry);
void registerCheckOps(OpRegistry& registry);
void registerRandomOps(OpRegistry& registry);
void registerIndexingOps(OpRegistry& registry);
void registerSortOps(OpRegistry& registry);
void registerSoftmaxOps(OpRegistry& registry);
void registerPoolingOps(OpRegistry& registry);
void registerNormalizationOps(OpRegistry& registry);
void registerLayoutOps(OpRegistry& registry);
void registerReductionOps(OpRegistry& registry);
void registerEmbeddingOps(OpRegistry& registry);
void registerNllLossOps(OpRegistry& registry);
void registerUpdateOps(OpRegistry& registry);
void registerHostCallOps(OpRegistry& registry);
void registerCollectiveOps(OpRegistry& registry);
void registerCustomGradientOps(OpRegistry& registry);
} // namespace ops

} // namespace popsim::ir
