#include "kernels/reference/ctc_loss.h"

#include "common/check.h"
#include "ir/pointwise_formulas.h"
#include "kernels/reference/log_sum_exp.h"

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

double logSumExp(double a, double b, double c) { return logSumExp3<ir::ScalarMath>(a, b, c); }

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
    // A label may be the blank: PyTorch's kernels run the recursions on such
    // a target as on any other, and so does popsim.
    for (int64_t i = 0; i < labels; ++i) {
      const int64_t label = targets[start + i];
      POPSIM_CHECK(label >= 0 && label < classes, ErrorKind::Execution, "target label ", label,
                   " at position ", i, " of sample ", n, " is not a class index in [0, ", classes,
                   ").");
    }
    offset += labels;
    result.push_back({static_cast<const float*>(inputs[first]) + n * classes, samples * classes,
                      targets + start, length, labels, blank});
  }
  return result;
}

// alpha and beta, frame by frame: each frame's row has two -inf entries on
// either side, so that the neighbours s - 1 and s + 1 of the first and last
// positions read -inf, as the recursions want.
struct Lattice {
  int64_t positions;
  std::vector<double> values;

  Lattice(int64_t frames, int64_t positions_)
      : positions(positions_), values(static_cast<size_t>(frames * (positions_ + 4)), kNegInf) {}
  double* row(int64_t t) { return values.data() + t * (positions + 4) + 2; }
  double at(int64_t t, int64_t s) const {
    return values[static_cast<size_t>(t * (positions + 4) + 2 + s)];
  }
};

// alpha(t, s): log-probability of the prefixes of l' ending at s at frame t;
// from frame t - 1's s, s - 1 and (between different labels) s - 2.
Lattice alphas(const Sample& x, const CtcMaths& maths) {
  const int64_t S = x.positions();
  Lattice alpha(x.frames, S);
  alpha.row(0)[0] = x.lp(0, x.blank);
  if (x.labels > 0) alpha.row(0)[1] = x.lp(0, x.prime(1));
  std::vector<double> skipped(static_cast<size_t>(S)), add(static_cast<size_t>(S));
  for (int64_t t = 1; t < x.frames; ++t) {
    const double* previous = alpha.row(t - 1);
    for (int64_t s = 0; s < S; ++s) {
      const bool skips = s > 1 && x.prime(s - 2) != x.prime(s);
      skipped[static_cast<size_t>(s)] = skips ? previous[s - 2] : kNegInf;
      add[static_cast<size_t>(s)] = x.lp(t, x.prime(s));
    }
    maths.logSumExpRows(previous, previous - 1, skipped.data(), add.data(), alpha.row(t), S);
  }
  return alpha;
}

// -log p(target | input): from the last two positions of l' at the last frame.
double negativeLogLikelihood(const Sample& x, const Lattice& alpha) {
  const int64_t S = x.positions(), last = x.frames - 1;
  const double beforeEnd = x.labels > 0 ? alpha.at(last, S - 2) : kNegInf;
  return -logSumExp(alpha.at(last, S - 1), beforeEnd, kNegInf);
}

// beta(t, s): log-probability of the suffixes of l' from s at frame t; from
// frame t + 1's s, s + 1 and (between different labels) s + 2.
Lattice betas(const Sample& x, const CtcMaths& maths) {
  const int64_t S = x.positions(), last = x.frames - 1;
  Lattice beta(x.frames, S);
  beta.row(last)[S - 1] = x.lp(last, x.blank);
  if (x.labels > 0) beta.row(last)[S - 2] = x.lp(last, x.prime(S - 2));
  std::vector<double> skipped(static_cast<size_t>(S)), add(static_cast<size_t>(S));
  for (int64_t t = last - 1; t >= 0; --t) {
    const double* next = beta.row(t + 1);
    for (int64_t s = 0; s < S; ++s) {
      const bool skips = s < S - 2 && x.prime(s + 2) != x.prime(s);
      skipped[static_cast<size_t>(s)] = skips ? next[s + 2] : kNegInf;
      add[static_cast<size_t>(s)] = x.lp(t, x.prime(s));
    }
    maths.logSumExpRows(next, next + 1, skipped.data(), add.data(), beta.row(t), S);
  }
  return beta;
}

void ctcLoss(const ir::Node& node, const Inputs& inputs, const Outputs& outputs,
             const CtcMaths& maths, bool parallel) {
  auto* nll = static_cast<float*>(outputs[0]);
  const std::vector<Sample> samples = samplesOf(node, inputs, 0);
  const auto count = static_cast<int64_t>(samples.size());
#pragma omp parallel for schedule(dynamic) if (parallel && count > 1)
  for (int64_t n = 0; n < count; ++n) {
    const Sample& x = samples[static_cast<size_t>(n)];
    nll[n] = static_cast<float>(negativeLogLikelihood(x, alphas(x, maths)));
  }
}

// dlp(t, c) = (exp(lp) - exp(log(sum over s with l'(s) = c of alpha beta) +
// nll - lp)) * grad for the sample's frames, 0 after them (PyTorch's formula,
// the gradient through the log-softmax that made lp included); 0 throughout
// for an infinite loss under zero_infinity.
void ctcLossGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs,
                 const CtcMaths& maths, bool parallel) {
  const ir::Shape& shape = node.input(1)->type().shape;
  const int64_t classes = shape[2];
  const auto* gradNll = static_cast<const float*>(inputs[0]);
  const auto* nlls = static_cast<const float*>(inputs[5]);
  auto* grad = static_cast<float*>(outputs[0]);
  std::fill(grad, grad + ir::elementCount(shape), 0.0f);
  const bool zeroInfinity = node.attrs().getBool("zero_infinity");
  const std::vector<Sample> samples = samplesOf(node, inputs, 1);
  const auto count = static_cast<int64_t>(samples.size());
#pragma omp parallel for schedule(dynamic) if (parallel && count > 1)
  for (int64_t n = 0; n < count; ++n) {
    const Sample& x = samples[static_cast<size_t>(n)];
    const double nll = nlls[n];
    if (zeroInfinity && std::isinf(nll)) continue;
    const Lattice alpha = alphas(x, maths);
    const Lattice beta = betas(x, maths);
    std::vector<double> posterior(static_cast<size_t>(classes));
    const int64_t S = x.positions(), last = x.frames - 1;
    for (int64_t t = 0; t < x.frames; ++t) {
      std::fill(posterior.begin(), posterior.end(), kNegInf);
      if (t == last) {
        // Only the last two positions reach the end. PyTorch assigns their
        // terms rather than adding them (they are a blank and a label, which
        // differ unless the label is the blank: then the label's term alone
        // counts), and popsim computes what PyTorch computes.
        posterior[static_cast<size_t>(x.blank)] = alpha.at(t, S - 1) + beta.at(t, S - 1);
        if (x.labels > 0) {
          posterior[static_cast<size_t>(x.prime(S - 2))] = alpha.at(t, S - 2) + beta.at(t, S - 2);
        }
      }
      for (int64_t s = 0; s < S && t != last; ++s) {
        const double ab = alpha.at(t, s) + beta.at(t, s);
        double& sum = posterior[static_cast<size_t>(x.prime(s))];
        sum = sum == kNegInf ? ab : logSumExp(sum, ab, kNegInf);
      }
      maths.gradients(x.logProbs + t * x.stride, posterior.data(), nll, gradNll[n],
                      grad + t * x.stride + n * classes, classes);
    }
  }
}

void scalarLogSumExpRows(const double* a, const double* b, const double* c, const double* add,
                         double* out, int64_t count) {
  for (int64_t s = 0; s < count; ++s)
    out[s] = logSumExp(a[s], b[s], c[s]) + add[s];
}

void scalarGradients(const float* lp, const double* posterior, double nll, double grad, float* dlp,
                     int64_t count) {
  for (int64_t k = 0; k < count; ++k) {
    const double value = lp[k];
    dlp[k] = static_cast<float>((std::exp(value) - std::exp(posterior[k] + nll - value)) * grad);
  }
}

} // namespace

CtcMaths scalarCtcMaths() { return {scalarLogSumExpRows, scalarGradients}; }

void ctcWith(const ir::Node& node, const Inputs& inputs, const Outputs& outputs,
             const CtcMaths& maths, bool parallel) {
  if (node.kind() == ir::OpKind::CtcLossGrad) {
    return ctcLossGrad(node, inputs, outputs, maths, parallel);
  }
  ctcLoss(node, inputs, outputs, maths, parallel);
}

void ctc(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  ctcWith(node, inputs, outputs, scalarCtcMaths(), false);
}

} // namespace popsim::kernels::reference
