#pragma once

#include "frontend/lowering_context.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace popsim::frontend {

// Lowers one aten node into IR ops through the context.
using LoweringFn = void (*)(LoweringContext& context);

class LoweringRegistry {
public:
  static const LoweringRegistry& instance();
  // nullptr when popsim has no lowering for the op.
  LoweringFn find(const std::string& opName) const;
  // Every op with a lowering or a refusal, sorted (for the coverage table).
  std::vector<std::string> names() const;
  void add(const std::string& opName, LoweringFn fn);
  // `opName` and its in-place form `opName_`, which lowers alike: aliasing.cpp
  // carries the result into self (or, for a layout change, makes self a view).
  void addWithInPlace(const std::string& opName, LoweringFn fn);
  // An op popsim recognises only to refuse, with the reason and what to do
  // instead: listed with the unsupported ops wherever the model uses it,
  // even after another unsupported op's result.
  void refuse(const std::string& opName, std::string reason);
  // The reason `opName` is refused; nullptr when it is not.
  const std::string* refusal(const std::string& opName) const;
  // Every refused op, sorted.
  std::vector<std::string> refusedNames() const;

private:
  std::unordered_map<std::string, LoweringFn> lowerings_;
  std::unordered_map<std::string, std::string> refusals_;
};

// Each lowerings/*.cpp file registers one family of aten ops.
namespace lowerings {
void registerConvolution(LoweringRegistry& registry);
void registerMatMul(LoweringRegistry& registry);
void registerContractions(LoweringRegistry& registry);
void registerActivations(LoweringRegistry& registry);
void registerPointwise(LoweringRegistry& registry);
void registerBinary(LoweringRegistry& registry);
void registerArithmetic(LoweringRegistry& registry);
void registerPooling(LoweringRegistry& registry);
void registerMarkers(LoweringRegistry& registry);
void registerHostCalls(LoweringRegistry& registry);
void registerCustomGradients(LoweringRegistry& registry);
void registerStatistics(LoweringRegistry& registry);
void registerNormalization(LoweringRegistry& registry);
void registerShapeOps(LoweringRegistry& registry);
void registerReductions(LoweringRegistry& registry);
void registerExtremumReductions(LoweringRegistry& registry);
void registerNorms(LoweringRegistry& registry);
void registerEmbedding(LoweringRegistry& registry);
void registerLosses(LoweringRegistry& registry);
void registerElementwiseLosses(LoweringRegistry& registry);
void registerMarginLosses(LoweringRegistry& registry);
void registerSimilarities(LoweringRegistry& registry);
void registerPadding(LoweringRegistry& registry);
void registerCtcLoss(LoweringRegistry& registry);
void registerRandom(LoweringRegistry& registry);
void registerIndexing(LoweringRegistry& registry);
void registerRearrangement(LoweringRegistry& registry);
void registerStridedViews(LoweringRegistry& registry);
void registerUpsampling(LoweringRegistry& registry);
void registerGridSampling(LoweringRegistry& registry);
void registerSorting(LoweringRegistry& registry);
void registerRecurrent(LoweringRegistry& registry);
void registerSearching(LoweringRegistry& registry);
void registerCreation(LoweringRegistry& registry);
void registerComplexNumbers(LoweringRegistry& registry);
void registerLinearAlgebra(LoweringRegistry& registry);
void registerDetectionOps(LoweringRegistry& registry);
} // namespace lowerings

} // namespace popsim::frontend
