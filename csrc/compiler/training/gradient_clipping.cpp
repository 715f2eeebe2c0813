// Gradient clipping by the global 2-norm (TrainingConfig::maxGradNorm > 0),
// as torch.nn.utils.clip_grad_norm_: the step's gradients are scaled by
// min(1, maxGradNorm / (norm + 1e-6)), norm the 2-norm of all of them
// together:
// 1. each IPU sums the squares of its own gradients in its gradient-norm
//    task; the squares of sharded parameters' shards are summed over the
//    replicas first (an all-reduce per IPU);
// 2. each IPU's update task adds up every IPU's sum in the same order (the
//    inter-IPU copies bring them), so all compute the same factor, as after
//    an all-reduce;
// 3. the map's gradients become the scaled ones.
// The norm is the updates' gradients': divided by the gradient scale and by
// a constant loss scaling, which the updates divide out (a factor held in a
// state has divided the gradients already).

#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"

#include <map>

namespace popsim::compiler {
namespace {

using training::addNode;
using training::inPhase;
using training::placementOf;

bool clipByGlobalNorm(ir::Graph& graph, PassContext& context) {
  const TrainingConfig& config = context.training();
  if (config.maxGradNorm <= 0.0) return false;
  const double lossScaling = config.lossScalingState ? 1.0 : config.lossScaling;
  const std::vector<ir::Graph::Gradient> gradients = graph.gradients();
  // Step 1.
  std::map<int64_t, ir::Value*> sums;        // per IPU
  std::map<int64_t, ir::Value*> shardedSums; // per IPU: of this replica's shards only
  std::map<int64_t, ir::Placement> places;
  for (const auto& [param, grad] : gradients) {
    const ir::Placement where = inPhase(placementOf(param), ir::Phase::GradientNorm);
    auto& sumsOfKind = training::isSharded(config, param) ? shardedSums : sums;
    ir::Value* squares =
        addNode(graph, ir::OpKind::Mul, {grad, grad}, {}, where.phase, where)->output();
    if (squares->type().rank() > 0) {
      std::vector<int64_t> dims(static_cast<size_t>(squares->type().rank()));
      for (size_t d = 0; d < dims.size(); ++d)
        dims[d] = static_cast<int64_t>(d);
      squares = addNode(graph, ir::OpKind::ReduceSum, {squares},
                        {{"dims", dims}, {"keepdim", false}}, where.phase, where)
                    ->output();
    }
    auto [sum, first] = sumsOfKind.emplace(where.ipu, squares);
    if (!first) {
      sum->second =
          addNode(graph, ir::OpKind::Add, {sum->second, squares}, {}, where.phase, where)->output();
    }
    places.emplace(where.ipu, inPhase(where, ir::Phase::Update));
  }
  // The shards' squares add up over the replicas to the whole gradients'.
  for (const auto& [ipu, partial] : shardedSums) {
    const ir::Placement where = inPhase(places.at(ipu), ir::Phase::GradientNorm);
    ir::Value* total =
        addNode(graph, ir::OpKind::ReplicaAllReduce, {partial},
                training::collectiveAttrs(config, "gradient_norm@ipu" + std::to_string(ipu)),
                where.phase, where)
            ->output();
    auto [sum, first] = sums.emplace(ipu, total);
    if (!first) {
      sum->second =
          addNode(graph, ir::OpKind::Add, {sum->second, total}, {}, where.phase, where)->output();
    }
  }
  // Step 2.
  std::map<int64_t, ir::Value*> factors;
  for (const auto& [ipu, where] : places) {
    ir::Value* total = nullptr;
    for (const auto& [from, sum] : sums) {
      total = total == nullptr
                  ? sum
                  : addNode(graph, ir::OpKind::Add, {total, sum}, {}, where.phase, where)->output();
    }
    ir::Value* norm = addNode(graph, ir::OpKind::Sqrt, {total}, {}, where.phase, where)->output();
    // The norm of the gradients the updates read: scaled, and unscaled.
    ir::Value* shifted = addNode(graph, ir::OpKind::Affine, {norm},
                                 {{"scale", config.gradientScale / lossScaling}, {"shift", 1e-6}},
                                 where.phase, where)
                             ->output();
    ir::Value* factor =
        addNode(graph, ir::OpKind::Div,
                {graph.addScalarConstant(static_cast<float>(config.maxGradNorm)), shifted}, {},
                where.phase, where)
            ->output();
    factors[ipu] =
        addNode(graph, ir::OpKind::BinaryPointwise, {factor, graph.addScalarConstant(1.0f)},
                {{"function", std::string("minimum")}}, where.phase, where)
            ->output();
  }
  // Step 3.
  for (const auto& [param, grad] : gradients) {
    const ir::Placement where = inPhase(placementOf(param), ir::Phase::Update);
    graph.setGradient(param, addNode(graph, ir::OpKind::Mul, {grad, factors.at(where.ipu)}, {},
                                     where.phase, where)
                                 ->output());
  }
  return !gradients.empty();
}

} // namespace

std::unique_ptr<Pass> createGradientClippingPass() {
  return std::make_unique<FunctionPass>("gradient-clipping", clipByGlobalNorm);
}

} // namespace popsim::compiler
