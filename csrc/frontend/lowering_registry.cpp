#include "frontend/lowering_registry.h"

#include "common/check.h"

#include <algorithm>

namespace popsim::frontend {

const LoweringRegistry& LoweringRegistry::instance() {
  static const LoweringRegistry registry = [] {
    LoweringRegistry r;
    lowerings::registerConvolution(r);
    lowerings::registerMatMul(r);
    lowerings::registerContractions(r);
    lowerings::registerActivations(r);
    lowerings::registerPointwise(r);
    lowerings::registerBinary(r);
    lowerings::registerArithmetic(r);
    lowerings::registerPooling(r);
    lowerings::registerMarkers(r);
    lowerings::registerHostCalls(r);
    lowerings::registerCustomGradients(r);
    lowerings::registerStatistics(r);
    lowerings::registerNormalization(r);
    lowerings::registerShapeOps(r);
    lowerings::registerReductions(r);
    lowerings::registerExtremumReductions(r);
    lowerings::registerNorms(r);
    lowerings::registerEmbedding(r);
    lowerings::registerLosses(r);
    lowerings::registerElementwiseLosses(r);
    lowerings::registerMarginLosses(r);
    lowerings::registerSimilarities(r);
    lowerings::registerPadding(r);
    lowerings::registerCtcLoss(r);
    lowerings::registerRandom(r);
    lowerings::registerIndexing(r);
    lowerings::registerRearrangement(r);
    lowerings::registerStridedViews(r);
    lowerings::registerUpsampling(r);
    lowerings::registerGridSampling(r);
    lowerings::registerSorting(r);
    lowerings::registerRecurrent(r);
    lowerings::registerSearching(r);
    lowerings::registerCreation(r);
    lowerings::registerComplexNumbers(r);
    lowerings::registerLinearAlgebra(r);
    lowerings::registerDetectionOps(r);
    return r;
  }();
  return registry;
}

LoweringFn LoweringRegistry::find(const std::string& opName) const {
  auto it = lowerings_.find(opName);
  return it == lowerings_.end() ? nullptr : it->second;
}

std::vector<std::string> LoweringRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& [name, fn] : lowerings_)
    result.push_back(name);
  for (const auto& [name, reason] : refusals_)
    result.push_back(name);
  std::sort(result.begin(), result.end());
  return result;
}

void LoweringRegistry::add(const std::string& opName, LoweringFn fn) {
  POPSIM_ASSERT(refusals_.count(opName) == 0 && lowerings_.emplace(opName, fn).second,
                "lowering of ", opName, " added twice.");
}

void LoweringRegistry::addWithInPlace(const std::string& opName, LoweringFn fn) {
  add(opName, fn);
  add(opName + "_", fn);
}

void LoweringRegistry::refuse(const std::string& opName, std::string reason) {
  POPSIM_ASSERT(lowerings_.count(opName) == 0 &&
                    refusals_.emplace(opName, std::move(reason)).second,
                "refusal of ", opName, " added twice.");
}

std::vector<std::string> LoweringRegistry::refusedNames() const {
  std::vector<std::string> result;
  for (const auto& [name, reason] : refusals_)
    result.push_back(name);
  std::sort(result.begin(), result.end());
  return result;
}

const std::string* LoweringRegistry::refusal(const std::string& opName) const {
  auto it = refusals_.find(opName);
  return it == refusals_.end() ? nullptr : &it->second;
}

} // namespace popsim::frontend
