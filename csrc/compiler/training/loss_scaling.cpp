// Loss scaling (TrainingConfig::lossScaling, lossScalingState and
// automaticLossScaling), after the gradients are accumulated and summed over
// the replicas:
// 1. the backward pass starts from the factor instead of autodiff's seed 1:
//    a constant in the loss's dtype, or (lossScalingState) the float32 state
//    ir::kLossScalingName on the loss's IPU, cast to the loss's dtype just
//    before the seed's first reader;
// 2. automatic loss scaling counts, on each IPU, the elements of its float16
//    backward values above the bin edge, summed over the step's
//    micro-batches in a state (<loss_scaling>/above_edge), at the end of each
//    stage's backward pass (before the gradients are accumulated);
// 3. with the factor in a state, the step's gradients are divided by it in
//    float32 (GradientNorm phase), each IPU reading its own copy; a constant
//    factor is divided out by the updates (the host divides their grad_scale
//    by it) and by clipping;
// 4. automatic loss scaling halves every IPU's copy of the factor if more than
//    the threshold's proportion of the counted elements lay above the edge,
//    and doubles it otherwise (Update phase), then clears the counts. A
//    backward pass without float16 values counts nothing, and the factor
//    keeps its value (with a warning).

#include "common/check.h"
#include "common/float16.h"
#include "common/logging.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"
#include "ir/dtype.h"
#include "ir/op_schema.h"

#include <map>
#include <memory>
#include <string>

namespace popsim::compiler {
namespace {

using training::addNode;
using training::inPhase;
using training::placementOf;

// The largest finite float16, which the bin edge is a fraction of.
constexpr double kHalfMax = 65504.0;
// A float16 loss's gradient must stay finite: the factor is capped at 2^15.
constexpr double kHalfLossScalingLimit = 32768.0;

// Backward values that only move or pick gradient elements (PopART leaves
// them out too): their elements are counted where they are computed.
bool movesElements(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::Concat:
  case ir::OpKind::Slice:
  case ir::OpKind::SliceUpdate:
  case ir::OpKind::Gather:
  case ir::OpKind::IndexSelect:
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute: return true;
  default: return ir::isViewOp(kind);
  }
}

// Whether a backward node computes the elements of its outputs. A cast of a
// float32 gradient to float16 does: it rounds, say, a float16 weight's
// gradient computed in float32 after PyTorch's promotion, and overflows where
// that gradient leaves float16's range. (Casts of values the backward pass
// did not compute, such as the loss scaling factor, are not gradients, and
// neither are casts of masks, such as a max's gradient's bool selection.)
bool computesElements(const ir::Node& node) {
  if (node.kind() == ir::OpKind::Cast) {
    const ir::Value* source = node.inputs().at(0);
    const ir::DType from = source->type().dtype;
    return ir::isFloat(from) && from != ir::DType::Float16 && source->producer() != nullptr &&
           source->producer()->placement().phase == ir::Phase::Backward;
  }
  return !movesElements(node.kind());
}

ir::Value* scalarOp(ir::Graph& graph, ir::OpKind kind, ir::Value* a, ir::Value* b,
                    const ir::Placement& where) {
  return addNode(graph, kind, {a, b}, {}, where.phase, where)->output();
}

class LossScaling {
public:
  LossScaling(ir::Graph& graph, const TrainingConfig& config, int64_t gradientAccumulation)
      : graph_(graph), config_(config), gradientAccumulation_(gradientAccumulation) {
    POPSIM_ASSERT(!config.automaticLossScaling || config.lossScalingState,
                  "automatic loss scaling needs the factor in a state.");
    if (config.lossScalingState) {
      factor_ = std::make_unique<training::ReplicatedState>(graph, ir::kLossScalingName,
                                                            ir::TensorType{ir::DType::Float32, {}},
                                                            ir::StateKind::Optimizer);
    }
  }

  void run() {
    scaleSeed();
    countGradients();
    unscale();
    addUpdate();
  }

private:
  // Step 1.
  void scaleSeed() {
    ir::Value* seed = graph_.gradientSeed();
    POPSIM_ASSERT(seed != nullptr, "loss scaling runs after autodiff, which records its seed.");
    ir::Value* loss = graph_.loss();
    ir::Value* scaled = nullptr;
    if (factor_ == nullptr) {
      scaled =
          graph_.addScalarConstant(static_cast<float>(config_.lossScaling), loss->type().dtype);
    } else {
      const ir::Placement where =
          inPhase(loss->producer() != nullptr ? loss->producer()->placement() : ir::Placement{},
                  ir::Phase::Backward);
      scaled = factor_->on(where.ipu);
      if (scaled->type() != loss->type()) {
        graph_.setInsertionPoint(firstReader(seed));
        scaled =
            addNode(graph_, ir::OpKind::Cast, {scaled},
                    {{"dtype", std::string(ir::dtypeName(loss->type().dtype))}}, where.phase, where)
                ->output();
        graph_.setInsertionPoint(nullptr);
      }
    }
    graph_.replaceAllUsesWith(seed, scaled);
  }

  // The node that reads `value` first in graph order (null: none).
  const ir::Node* firstReader(const ir::Value* value) const {
    for (const auto& node : graph_.nodes()) {
      for (const ir::Value* input : node->inputs()) {
        if (input == value) return node.get();
      }
    }
    return nullptr;
  }

  // Step 2.
  void countGradients() {
    if (!config_.automaticLossScaling) return;
    std::vector<std::pair<ir::Value*, ir::Placement>> tracked;
    for (const auto& node : graph_.nodes()) {
      if (node->placement().phase != ir::Phase::Backward || !computesElements(*node)) continue;
      for (ir::Value* output : node->outputs()) {
        if (output->type().dtype == ir::DType::Float16) {
          tracked.emplace_back(output, node->placement());
        }
      }
    }
    if (tracked.empty()) {
      // Nothing can overflow float16, so the factor keeps its value, as PopTorch runs such a
      // model (Graphcore's configurations turn the option on for float32 runs too).
      POPSIM_LOG(Warn) << "Training.setAutomaticLossScaling(True): the backward pass computes "
                          "no float16 gradients, whose statistics would set the loss scaling, "
                          "so the loss scaling keeps its value. Train a float16 model "
                          "(model.half()) for it to adapt.";
      return;
    }
    // The end of the backward pass: before the first accumulation of a
    // micro-batch's gradients, if any.
    for (const auto& node : graph_.nodes()) {
      if (node->kind() == ir::OpKind::Accumulate) {
        graph_.setInsertionPoint(node.get());
        break;
      }
    }
    const float edge = roundToHalf(static_cast<float>(kHalfMax * config_.lossScalingBinEdge));
    ir::Value* edgeValue = graph_.addScalarConstant(edge, ir::DType::Float16);
    // Summed per stage, each stage's sum accumulated in its own task (stages
    // that share an IPU, as sharded execution may place them, run their
    // backward passes in different tasks), into its IPU's count.
    std::map<int64_t, std::pair<ir::Value*, ir::Placement>> sums;
    for (const auto& [value, where] : tracked) {
      ir::Value* magnitude =
          addNode(graph_, ir::OpKind::Abs, {value}, {}, where.phase, where)->output();
      ir::Value* above = addNode(graph_, ir::OpKind::BinaryPointwise, {magnitude, edgeValue},
                                 {{"function", std::string("gt")}}, where.phase, where)
                             ->output();
      ir::Value* flags =
          addNode(graph_, ir::OpKind::Cast, {above},
                  {{"dtype", std::string(ir::dtypeName(ir::DType::Float32))}}, where.phase, where)
              ->output();
      std::vector<int64_t> dims(static_cast<size_t>(flags->type().rank()));
      for (size_t d = 0; d < dims.size(); ++d)
        dims[d] = static_cast<int64_t>(d);
      ir::Value* count = dims.empty()
                             ? flags
                             : addNode(graph_, ir::OpKind::ReduceSum, {flags},
                                       {{"dims", dims}, {"keepdim", false}}, where.phase, where)
                                   ->output();
      auto [sum, first] = sums.emplace(where.stage, std::make_pair(count, where));
      if (!first) {
        sum->second.first = scalarOp(graph_, ir::OpKind::Add, sum->second.first, count, where);
      }
      countPlaces_.emplace(where.ipu, where);
      countedPerMicroBatch_ += static_cast<double>(value->type().numel());
    }
    training::ReplicatedState counts(graph_, std::string(ir::kLossScalingName) + "/above_edge",
                                     {ir::DType::Float32, {}}, ir::StateKind::Accumulator);
    for (const auto& [stage, sum] : sums) {
      const auto& [value, where] = sum;
      ir::Value* state = counts.on(where.ipu);
      addNode(graph_, ir::OpKind::Accumulate, {state, value}, {{"every", int64_t{1}}}, where.phase,
              where);
      upperCounts_[where.ipu] = state;
    }
    graph_.setInsertionPoint(nullptr);
  }

  // Step 3.
  void unscale() {
    if (factor_ == nullptr) return;
    std::map<int64_t, ir::Value*> inverses;
    const std::vector<ir::Graph::Gradient> gradients = graph_.gradients();
    for (const auto& [param, grad] : gradients) {
      const ir::Placement where = inPhase(placementOf(param), ir::Phase::GradientNorm);
      ir::Value*& inverse = inverses[where.ipu];
      if (inverse == nullptr) {
        inverse = scalarOp(graph_, ir::OpKind::Div, graph_.addScalarConstant(1.0f),
                           factor_->on(where.ipu), where);
      }
      ir::Value* value = grad;
      if (value->type().dtype != ir::DType::Float32) {
        value =
            addNode(graph_, ir::OpKind::Cast, {value},
                    {{"dtype", std::string(ir::dtypeName(ir::DType::Float32))}}, where.phase, where)
                ->output();
      }
      graph_.setGradient(param, scalarOp(graph_, ir::OpKind::Mul, value, inverse, where));
    }
  }

  // Step 4.
  void addUpdate() {
    if (!config_.automaticLossScaling || upperCounts_.empty()) return; // (nothing counted)
    // Each IPU's count, taken once per step before it is reset (summed over
    // the replicas, which count their own micro-batches).
    std::map<int64_t, ir::Value*> taken;
    for (const auto& [ipu, state] : upperCounts_) {
      const ir::Placement where = inPhase(countPlaces_.at(ipu), ir::Phase::GradientNorm);
      taken[ipu] =
          config_.replicas > 1
              ? addNode(graph_, ir::OpKind::ReplicaAllReduce, {state},
                        training::collectiveAttrs(config_, std::string(ir::kLossScalingName) +
                                                               "@ipu" + std::to_string(ipu)),
                        where.phase, where)
                    ->output()
              : addNode(graph_, ir::OpKind::Affine, {state}, {{"scale", 1.0}, {"shift", 0.0}},
                        where.phase, where)
                    ->output();
    }
    const double counted = countedPerMicroBatch_ * static_cast<double>(gradientAccumulation_) *
                           static_cast<double>(config_.replicas);
    const double ratio = config_.lossScalingThreshold / (1.0 - config_.lossScalingThreshold);
    const bool halfLoss = graph_.loss()->type().dtype == ir::DType::Float16;
    for (const auto& [ipu, factor] : factor_->copies()) {
      ir::Placement where = inPhase(ir::Placement{}, ir::Phase::Update);
      for (const ir::Node* user : factor->users()) {
        if (user->placement().ipu == ipu) where = inPhase(user->placement(), ir::Phase::Update);
      }
      ir::Value* above = nullptr;
      for (const auto& [from, count] : taken) {
        above = above == nullptr ? count : scalarOp(graph_, ir::OpKind::Add, above, count, where);
      }
      // More than the threshold's proportion above the edge: halve; else double.
      ir::Value* limit =
          addNode(graph_, ir::OpKind::Affine, {above},
                  {{"scale", -ratio}, {"shift", ratio * counted}}, where.phase, where)
              ->output();
      ir::Value* decrease = addNode(graph_, ir::OpKind::BinaryPointwise, {above, limit},
                                    {{"function", std::string("gt")}}, where.phase, where)
                                ->output();
      ir::Value* multiplier =
          addNode(graph_, ir::OpKind::Where,
                  {decrease, graph_.addScalarConstant(0.5f), graph_.addScalarConstant(2.0f)}, {},
                  where.phase, where)
              ->output();
      ir::Value* next = scalarOp(graph_, ir::OpKind::Mul, factor, multiplier, where);
      if (halfLoss) {
        next = addNode(graph_, ir::OpKind::BinaryPointwise,
                       {next, graph_.addScalarConstant(static_cast<float>(kHalfLossScalingLimit))},
                       {{"function", std::string("minimum")}}, where.phase, where)
                   ->output();
      }
      addNode(graph_, ir::OpKind::Assign, {factor, next}, {}, where.phase, where);
    }
    for (const auto& [ipu, state] : upperCounts_) {
      addNode(graph_, ir::OpKind::Fill, {state}, {{"value", 0.0}}, ir::Phase::Update,
              inPhase(countPlaces_.at(ipu), ir::Phase::Update));
    }
  }

  ir::Graph& graph_;
  const TrainingConfig& config_;
  int64_t gradientAccumulation_;
  // The factor, when it is a state: a copy on each IPU that reads it.
  std::unique_ptr<training::ReplicatedState> factor_;
  // Automatic: per IPU, the count above the edge, and the elements counted.
  std::map<int64_t, ir::Value*> upperCounts_;
  std::map<int64_t, ir::Placement> countPlaces_;
  double countedPerMicroBatch_ = 0.0;
};

} // namespace

std::unique_ptr<Pass> createLossScalingPass() {
  return std::make_unique<FunctionPass>("loss-scaling", [](ir::Graph& graph, PassContext& context) {
    if (!context.training().scalesLoss()) return false;
    LossScaling scaling(graph, context.training(), context.options().gradientAccumulation);
    scaling.run();
    return true;
  });
}

} // namespace popsim::compiler
