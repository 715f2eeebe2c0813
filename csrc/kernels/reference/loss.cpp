#include "common/check.h"
#include "kernels/reference/families.h"

#include <limits>

namespace popsim::kernels::reference {
namespace {

int64_t checkedTarget(int64_t target, int64_t classes, int64_t sample, int64_t ignoreIndex) {
  POPSIM_CHECK(target == ignoreIndex || (target >= 0 && target < classes), ErrorKind::Execution,
               "target ", target, " of sample ", sample, " is not a class index in [0, ", classes,
               ").");
  return target;
}

// loss = -log_probs[i, target[i]] per sample; mean over the samples whose
// target is not ignore_index (NaN when all are), sum, or none.
void nllLoss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* logp = static_cast<const float*>(inputs[0]);
  const auto* target = static_cast<const int64_t*>(inputs[1]);
  auto* loss = static_cast<float*>(outputs[0]);
  const int64_t samples = node.input(0)->type().shape[0];
  const int64_t classes = node.input(0)->type().shape[1];
  const int64_t ignore = node.attrs().getInt("ignore_index");
  const std::string& reduction = node.attrs().getString("reduction");
  double sum = 0.0;
  int64_t counted = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t t = checkedTarget(target[i], classes, i, ignore);
    const double value = t == ignore ? 0.0 : -static_cast<double>(logp[i * classes + t]);
    counted += t == ignore ? 0 : 1;
    if (reduction == "none") {
      loss[i] = static_cast<float>(value);
    }
    sum += value;
  }
  if (reduction == "sum") {
    loss[0] = static_cast<float>(sum);
  } else if (reduction == "mean") {
    loss[0] = counted == 0 ? std::numeric_limits<float>::quiet_NaN()
                           : static_cast<float>(sum / static_cast<double>(counted));
  }
}

// dLogProbs: -dLoss (divided by the counted samples for mean) at each
// sample's target class, 0 elsewhere and for ignored samples.
void nllLossGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* grad = static_cast<const float*>(inputs[0]);
  const auto* target = static_cast<const int64_t*>(inputs[1]);
  auto* dlogp = static_cast<float*>(outputs[0]);
  const int64_t samples = node.output()->type().shape[0];
  const int64_t classes = node.output()->type().shape[1];
  const int64_t ignore = node.attrs().getInt("ignore_index");
  const std::string& reduction = node.attrs().getString("reduction");
  std::fill(dlogp, dlogp + samples * classes, 0.0f);
  int64_t counted = 0;
  for (int64_t i = 0; i < samples; ++i) {
    counted += checkedTarget(target[i], classes, i, ignore) == ignore ? 0 : 1;
  }
  for (int64_t i = 0; i < samples; ++i) {
    if (target[i] == ignore) continue;
    const float g = reduction == "none"   ? grad[i]
                    : reduction == "mean" ? grad[0] / static_cast<float>(counted)
                                          : grad[0];
    dlogp[i * classes + target[i]] = -g;
  }
}

} // namespace

void loss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.kind() == ir::OpKind::NllLossGrad) {
    return nllLossGrad(node, inputs, outputs);
  }
  nllLoss(node, inputs, outputs);
}

} // namespace popsim::kernels::reference
