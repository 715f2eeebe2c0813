#include "common/check.h"
#include "kernels/reference/families.h"

namespace popsim::kernels::reference {
namespace {

int64_t checkedTarget(int64_t target, int64_t classes, int64_t sample, int64_t ignoreIndex) {
  POPSIM_CHECK(target == ignoreIndex || (target >= 0 && target < classes), ErrorKind::Execution,
               "target ", target, " of sample ", sample, " is not a class index in [0, ", classes,
               ").");
  return target;
}

// The class weight of target t: weight[t], or 1 without weights.
float classWeight(const Inputs& inputs, int64_t t) {
  return inputs.size() > 2 ? static_cast<const float*>(inputs[2])[t] : 1.0f;
}

// loss = -weight[t] * log_probs[i, t] per sample (t = target[i]); mean over
// the weights of the samples whose target is not ignore_index (NaN when
// their total is 0), sum, or none.
void nllLoss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* logp = static_cast<const float*>(inputs[0]);
  const auto* target = static_cast<const int64_t*>(inputs[1]);
  auto* loss = static_cast<float*>(outputs[0]);
  const int64_t samples = node.input(0)->type().shape[0];
  const int64_t classes = node.input(0)->type().shape[1];
  const int64_t ignore = node.attrs().getInt("ignore_index");
  const std::string& reduction = node.attrs().getString("reduction");
  double sum = 0.0;
  double counted = 0.0;
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t t = checkedTarget(target[i], classes, i, ignore);
    const float weight = t == ignore ? 0.0f : classWeight(inputs, t);
    const double value = t == ignore ? 0.0 : -static_cast<double>(weight * logp[i * classes + t]);
    counted += weight;
    if (reduction == "none") {
      loss[i] = static_cast<float>(value);
    }
    sum += value;
  }
  if (reduction == "sum") {
    loss[0] = static_cast<float>(sum);
  } else if (reduction == "mean") {
    // (0 / 0 is NaN, as in PyTorch when every target is ignored.)
    loss[0] = static_cast<float>(sum / counted);
  }
}

// dLogProbs: -dLoss x the class weight (divided by the total weight of the
// counted samples for mean) at each sample's target class, 0 elsewhere and
// for ignored samples.
void nllLossGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* grad = static_cast<const float*>(inputs[0]);
  const auto* target = static_cast<const int64_t*>(inputs[1]);
  auto* dlogp = static_cast<float*>(outputs[0]);
  const int64_t samples = node.output()->type().shape[0];
  const int64_t classes = node.output()->type().shape[1];
  const int64_t ignore = node.attrs().getInt("ignore_index");
  const std::string& reduction = node.attrs().getString("reduction");
  std::fill(dlogp, dlogp + samples * classes, 0.0f);
  double counted = 0.0;
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t t = checkedTarget(target[i], classes, i, ignore);
    counted += t == ignore ? 0.0 : classWeight(inputs, t);
  }
  for (int64_t i = 0; i < samples; ++i) {
    if (target[i] == ignore) continue;
    const float g = reduction == "none"   ? grad[i]
                    : reduction == "mean" ? grad[0] / static_cast<float>(counted)
                                          : grad[0];
    dlogp[i * classes + target[i]] = -g * classWeight(inputs, target[i]);
  }
}

} // namespace

void loss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.kind() == ir::OpKind::CtcLoss || node.kind() == ir::OpKind::CtcLossGrad) {
    return ctc(node, inputs, outputs);
  }
  if (node.kind() == ir::OpKind::NllLossGrad) {
    return nllLossGrad(node, inputs, outputs);
  }
  nllLoss(node, inputs, outputs);
}

} // namespace popsim::kernels::reference
