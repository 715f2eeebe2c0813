#include "common/check.h"
#include "kernels/reference/families.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

// ctc_loss and its gradient as PyTorch's CPU kernels compute them: log-space
// alpha (forward) and beta (backward) recursions over the target with blanks
// between its labels (l' = blank, l1, blank, l2, ..., blank), here in double.
namespace popsim::kernels::reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b) + exp(c)) as PyTorch: around the largest, 0 if all are -inf.
double logSumExp(double a, double b, double c) {
  double m = std::max(a, std::max(b, c));
  if (m == kNegInf) m = 0.0;
  return std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m)) + m;
}

// One sample: its log-probabilities lp(t, c), its target labels and lengths.
struct Sample {
  const float* logProbs; // [T, N, C] at this sample's column
  int64_t stride;        // N * C: from one frame to the next
  const int64_t* target;
  int64_t frames; // input length
  int64_t labels; // target length
  int64_t blank;
  double lp(int64_t t, int64_t c) const { return logProbs[t * stride + c]; }
  // The label at position s of l' (blanks at even positions).
  int64_t prime(int64_t s) const { return s % 2 == 0 ? blank : target[s / 2]; }
  int64_t positions() const { return 2 * labels + 1; }
};

// The samples of a batch, with their lengths and labels checked.
std::vector<Sample> samplesOf(const ir::Node& node, const Inputs& inputs, size_t first) {
  const ir::Shape& shape = node.input(first)->type().shape; // [T, N, C]
  const int64_t frames = shape[0], samples = shape[1], classes = shape[2];
  const ir::TensorType& targetType = node.input(first + 1)->type();
  const auto* targets = static_cast<const int64_t*>(inputs[first + 1]);
  const auto* inputLengths = static_cast<const int64_t*>(inputs[first + 2]);
  const auto* targetLengths = static_cast<const int64_t*>(inputs[first + 3]);
  const int64_t blank = node.attrs().getInt("blank");
  const bool padded = targetType.rank() == 2;
  const int64_t width = padded ? targetType.shape[1] : targetType.shape[0];
  std::vector<Sample> result;
  int64_t offset = 0; // into concatenated targets
  for (int64_t n = 0; n < samples; ++n) {
    const int64_t length = inputLengths[n];
    const int64_t labels = targetLengths[n];
    POPSIM_CHECK(length >= 1 && length <= frames, ErrorKind::Execution, "input length ", length,
                 " of sample ", n, " is not in [1, ", frames, "] (the frames of log_probs).");
    const int64_t start = padded ? n * width : offset;
    POPSIM_CHECK(labels >= 0 && (padded ? labels <= width : start + labels <= width),
                 ErrorKind::Execution, "target length ", labels, " of sample ", n,
                 padded ? " is longer than the targets' " : " runs past the concatenated targets' ",
                 width, " labels.");
    for (int64_t i = 0; i < labels; ++i) {
      const int64_t label = targets[start + i];
      POPSIM_CHECK(label >= 0 && label < classes && label != blank, ErrorKind::Execution,
                   "target label ", label, " at position ", i, " of sample ", n,
                   " is not a class index in [0, ", classes, ") other than the blank ", blank, ".");
    }
    offset += labels;
    result.push_back({static_cast<const float*>(inputs[first]) + n * classes, samples * classes,
                      targets + start, length, labels, blank});
  }
  return result;
}

// alpha(t, s): log-probability of the prefixes of l' ending at s at frame t.
std::vector<double> alphas(const Sample& x) {
  const int64_t S = x.positions();
  std::vector<double> alpha(static_cast<size_t>(x.frames * S), kNegInf);
  alpha[0] = x.lp(0, x.blank);
  if (x.labels > 0) alpha[1] = x.lp(0, x.prime(1));
  for (int64_t t = 1; t < x.frames; ++t) {
    for (int64_t s = 0; s < S; ++s) {
      const double* previous = &alpha[static_cast<size_t>((t - 1) * S)];
      const int64_t label = x.prime(s);
      const double a = previous[s];
      const double b = s > 0 ? previous[s - 1] : kNegInf;
      const double c = s > 1 && x.prime(s - 2) != label ? previous[s - 2] : kNegInf;
      alpha[static_cast<size_t>(t * S + s)] = logSumExp(a, b, c) + x.lp(t, label);
    }
  }
  return alpha;
}

// -log p(target | input): from the last two positions of l' at the last frame.
double negativeLogLikelihood(const Sample& x, const std::vector<double>& alpha) {
  const int64_t S = x.positions();
  const size_t last = static_cast<size_t>((x.frames - 1) * S);
  const double end = alpha[last + static_cast<size_t>(S - 1)];
  const double beforeEnd = x.labels > 0 ? alpha[last + static_cast<size_t>(S - 2)] : kNegInf;
  return -logSumExp(end, beforeEnd, kNegInf);
}

// beta(t, s): log-probability of the suffixes of l' from s at frame t.
std::vector<double> betas(const Sample& x) {
  const int64_t S = x.positions();
  std::vector<double> beta(static_cast<size_t>(x.frames * S), kNegInf);
  const size_t last = static_cast<size_t>((x.frames - 1) * S);
  beta[last + static_cast<size_t>(S - 1)] = x.lp(x.frames - 1, x.blank);
  if (x.labels > 0) beta[last + static_cast<size_t>(S - 2)] = x.lp(x.frames - 1, x.prime(S - 2));
  for (int64_t t = x.frames - 2; t >= 0; --t) {
    for (int64_t s = 0; s < S; ++s) {
      const double* next = &beta[static_cast<size_t>((t + 1) * S)];
      const int64_t label = x.prime(s);
      const double a = next[s];
      const double b = s < S - 1 ? next[s + 1] : kNegInf;
      const double c = s < S - 2 && x.prime(s + 2) != label ? next[s + 2] : kNegInf;
      beta[static_cast<size_t>(t * S + s)] = logSumExp(a, b, c) + x.lp(t, label);
    }
  }
  return beta;
}

void ctcLoss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  auto* nll = static_cast<float*>(outputs[0]);
  const std::vector<Sample> samples = samplesOf(node, inputs, 0);
  for (size_t n = 0; n < samples.size(); ++n) {
    nll[n] = static_cast<float>(negativeLogLikelihood(samples[n], alphas(samples[n])));
  }
}

// dlp(t, c) = (exp(lp) - exp(log(sum over s with l'(s) = c of alpha beta) +
// nll - lp)) * grad for the sample's frames, 0 after them (PyTorch's formula,
// the gradient through the log-softmax that made lp included); 0 throughout
// for an infinite loss under zero_infinity.
void ctcLossGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::Shape& shape = node.input(1)->type().shape;
  const int64_t classes = shape[2];
  const auto* gradNll = static_cast<const float*>(inputs[0]);
  const auto* nlls = static_cast<const float*>(inputs[5]);
  auto* grad = static_cast<float*>(outputs[0]);
  std::fill(grad, grad + ir::elementCount(shape), 0.0f);
  const bool zeroInfinity = node.attrs().getBool("zero_infinity");
  const std::vector<Sample> samples = samplesOf(node, inputs, 1);
  std::vector<double> posterior(static_cast<size_t>(classes));
  for (size_t n = 0; n < samples.size(); ++n) {
    const Sample& x = samples[n];
    const double nll = nlls[n];
    if (zeroInfinity && std::isinf(nll)) continue;
    const std::vector<double> alpha = alphas(x);
    const std::vector<double> beta = betas(x);
    const int64_t S = x.positions();
    for (int64_t t = 0; t < x.frames; ++t) {
      std::fill(posterior.begin(), posterior.end(), kNegInf);
      for (int64_t s = 0; s < S; ++s) {
        const double ab =
            alpha[static_cast<size_t>(t * S + s)] + beta[static_cast<size_t>(t * S + s)];
        double& sum = posterior[static_cast<size_t>(x.prime(s))];
        sum = sum == kNegInf ? ab : logSumExp(sum, ab, kNegInf);
      }
      float* row = grad + t * x.stride + static_cast<int64_t>(n) * classes;
      for (int64_t c = 0; c < classes; ++c) {
        const double lp = x.lp(t, c);
        row[c] = static_cast<float>(
            (std::exp(lp) - std::exp(posterior[static_cast<size_t>(c)] + nll - lp)) * gradNll[n]);
      }
    }
  }
}

} // namespace

void ctc(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.kind() == ir::OpKind::CtcLossGrad) return ctcLossGrad(node, inputs, outputs);
  ctcLoss(node, inputs, outputs);
}

} // namespace popsim::kernels::reference
