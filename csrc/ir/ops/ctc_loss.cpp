#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

// The connectionist temporal classification loss: the negative log
// likelihood of each sample's target sequence over all alignments of it to
// the input frames (with blanks), by PyTorch's alpha-beta recursions.
namespace popsim::ir::ops {
namespace {

// log_probs [T, N, C] (float32), targets [N, S] padded or [sum of target
// lengths] concatenated (int64), input_lengths [N] and target_lengths [N] (int64).
void checkCtcInputs(const std::vector<TensorType>& inputs, size_t first) {
  const TensorType& logProbs = inputs[first];
  requireFloat(logProbs, "log_probs");
  requireRank(logProbs, 3, "log_probs");
  const int64_t samples = logProbs.shape[1];
  const TensorType& targets = inputs[first + 1];
  requireDType(targets, DType::Int64, "targets");
  POPSIM_CHECK(targets.rank() == 1 || (targets.rank() == 2 && targets.shape[0] == samples),
               ErrorKind::Compilation, "targets must be [", samples,
               ", S] (padded) or 1-D (concatenated), got ", targets.str(), ".");
  for (size_t i : {first + 2, first + 3}) {
    const char* what = i == first + 2 ? "input_lengths" : "target_lengths";
    requireDType(inputs[i], DType::Int64, what);
    requireShape(inputs[i], {samples}, what);
  }
}

// ctc_loss(log_probs, targets, input_lengths, target_lengths) {blank,
// zero_infinity} -> nll [N] (zero_infinity: an infinite loss gets a zero
// gradient; the lowering zeroes the loss itself).
std::vector<TensorType> inferCtcLoss(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  checkCtcInputs(inputs, 0);
  const int64_t blank = attrs.getInt("blank");
  const int64_t classes = inputs[0].shape[2];
  POPSIM_CHECK(blank >= 0 && blank < classes, ErrorKind::Compilation, "blank ", blank,
               " is not a class index in [0, ", classes, ").");
  return {{inputs[0].dtype, {inputs[0].shape[1]}}};
}

// ctc_loss_grad(grad_nll [N], log_probs, targets, input_lengths,
// target_lengths, nll [N]) {blank, zero_infinity} -> grad_log_probs [T, N, C].
std::vector<TensorType> inferCtcLossGrad(const std::vector<TensorType>& inputs, const Attributes&) {
  checkCtcInputs(inputs, 1);
  const Shape samples = {inputs[1].shape[1]};
  requireFloat(inputs[0], "input 0 (grad_nll)");
  requireShape(inputs[0], samples, "input 0 (grad_nll)");
  requireShape(inputs[5], samples, "input 5 (nll)");
  return {inputs[1]};
}

// ctc_loss: PyTorch's gradient into the log-probabilities only.
Grads ctcLossGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = b.emit(OpKind::CtcLossGrad, {g[0], in(b, 0), in(b, 1), in(b, 2), in(b, 3), out(b)},
                     copyAttrs(nodeOf(b).attrs(), {"blank", "zero_infinity"}));
  return result;
}

} // namespace

void registerCtcLossOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"blank", AttrType::Int}, {"zero_infinity", AttrType::Bool}};
  registry.add(OpKind::CtcLoss, 4, 4, {"log_probs", "targets", "input_lengths", "target_lengths"},
               attrs, inferCtcLoss);
  registry.add(OpKind::CtcLossGrad, 6, 6,
               {"grad_nll", "log_probs", "targets", "input_lengths", "target_lengths", "nll"},
               attrs, inferCtcLossGrad);
  registry.setGradient(OpKind::CtcLoss, ctcLossGradient);
  registry.setWork(OpKind::CtcLoss, work::reduction<1>);
  registry.setWork(OpKind::CtcLossGrad, work::reduction<1>);
}

} // namespace popsim::ir::ops
