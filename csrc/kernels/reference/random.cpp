#include "kernels/reference/families.h"
#include "kernels/reference/random_bits.h"

#include <cmath>
#include <string>

namespace popsim::kernels::reference {
namespace {

// dropout(X, counter) -> (Y, mask). Each element keeps its value scaled by
// 1/(1-p) with probability 1-p; the draw is a hash of (seed, stream, counter,
// element index), so a program run with the same seed repeats its masks and
// every micro-batch (counter) and dropout op (stream) gets fresh ones.
void dropout(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const int64_t counter = *static_cast<const int64_t*>(inputs[1]);
  auto* y = static_cast<float*>(outputs[0]);
  auto* mask = static_cast<float*>(outputs[1]);
  const double p = node.attrs().getFloat("p");
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  const uint64_t seed = static_cast<uint64_t>(node.attrs().getInt("seed"));
  const uint64_t stream = static_cast<uint64_t>(node.attrs().getInt("stream"));
  for (int64_t i = 0; i < node.output()->type().numel(); ++i) {
    const double u =
        uniformBits(seed, stream, static_cast<uint64_t>(counter), static_cast<uint64_t>(i));
    mask[i] = u < p ? 0.0f : keep;
    y[i] = x[i] * mask[i];
  }
}

// The uniform draw of element `index` of a random op at `counter`.
struct Draws {
  uint64_t seed, stream, counter;
  double operator()(int64_t index) const {
    return uniformBits(seed, stream, counter, static_cast<uint64_t>(index));
  }
};

Draws drawsOf(const ir::Node& node, const void* counter) {
  return {static_cast<uint64_t>(node.attrs().getInt("seed")),
          static_cast<uint64_t>(node.attrs().getInt("stream")),
          static_cast<uint64_t>(*static_cast<const int64_t*>(counter))};
}

// random_draw: element i from the uniform draws of i (normal: Box-Muller on
// the draws of 2i and 2i + 1; exponential: inversion).
void randomDraw(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const Draws u = drawsOf(node, inputs[0]);
  const std::string& distribution = node.attrs().getString("distribution");
  const std::vector<double>& p = node.attrs().getFloats("params");
  const int64_t count = node.output()->type().numel();
  if (distribution == "integers") {
    auto* y = static_cast<int64_t*>(outputs[0]);
    const double span = p[1] - p[0];
    if (span <= 0x1.0p53) {
      for (int64_t i = 0; i < count; ++i)
        y[i] = static_cast<int64_t>(p[0]) + static_cast<int64_t>(std::floor(u(i) * span));
      return;
    }
    // Wider ranges (int64's whole, up to 2^64 values) take all 64 bits, so
    // that every low bit varies: the high half of bits x span (its bias is
    // below span / 2^64), added modulo 2^64.
    __extension__ using Wide = unsigned __int128;
    const auto width = static_cast<Wide>(span);
    const auto low = static_cast<uint64_t>(static_cast<int64_t>(p[0]));
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t bits = randomBits(u.seed, u.stream, u.counter, static_cast<uint64_t>(i));
      const auto offset = static_cast<uint64_t>((bits * width) >> 64);
      y[i] = static_cast<int64_t>(low + offset);
    }
    return;
  }
  auto* y = static_cast<float*>(outputs[0]);
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t i = 0; i < count; ++i) {
    double value = 0.0;
    if (distribution == "uniform") {
      value = p[0] + (p[1] - p[0]) * u(i);
    } else if (distribution == "normal") {
      value =
          p[0] + p[1] * std::sqrt(-2.0 * std::log1p(-u(2 * i))) * std::cos(kTwoPi * u(2 * i + 1));
    } else if (distribution == "exponential") {
      value = -std::log1p(-u(i)) / p[0];
    } else { // bernoulli
      value = u(i) < p[0] ? 1.0 : 0.0;
    }
    y[i] = static_cast<float>(value);
  }
}

// random_bernoulli: 1 where the draw is below the element's probability.
void randomBernoulli(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const Draws u = drawsOf(node, inputs[1]);
  const auto* p = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  for (int64_t i = 0; i < node.output()->type().numel(); ++i)
    y[i] = u(i) < static_cast<double>(p[i]) ? 1.0f : 0.0f;
}

// One Poisson count of mean `rate`, from the uniform draws `next()`. Below a
// mean of 10, the inverse of the distribution function: the first k whose
// cumulative probability reaches the draw. From 10 on, Hoermann's
// transformed rejection with squeeze (PTRS, "The transformed rejection
// method for generating Poisson random variables", 1993), with the paper's
// constants: a candidate from a transformed uniform, accepted at once in
// the squeeze region, else by comparing with the log probability.
template <typename NextUniform> double poissonCount(double rate, NextUniform next) {
  if (!(rate > 0.0)) return rate == 0.0 ? 0.0 : std::nan("");
  if (std::isinf(rate)) return rate;
  if (rate < 10.0) {
    const double u = next();
    double probability = std::exp(-rate), cumulative = probability, k = 0.0;
    while (cumulative < u && probability > 0.0) {
      k += 1.0;
      probability *= rate / k;
      cumulative += probability;
    }
    return k;
  }
  const double root = std::sqrt(rate), logRate = std::log(rate);
  const double b = 0.931 + 2.53 * root;
  const double a = -0.059 + 0.02483 * b;
  const double inverseAlpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = next() - 0.5, v = next();
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inverseAlpha) - std::log(a / (us * us) + b) <=
        -rate + k * logRate - std::lgamma(k + 1.0)) {
      return k;
    }
  }
}

// random_poisson: a count per element; element i takes the draws i * 2^24,
// i * 2^24 + 1, ... (the sampler needs one or two per candidate).
void randomPoisson(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const Draws u = drawsOf(node, inputs[1]);
  const auto* rate = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  for (int64_t i = 0; i < node.output()->type().numel(); ++i) {
    int64_t drawn = 0;
    const auto next = [&] { return u((i << 24) + drawn++); };
    y[i] = static_cast<float>(poissonCount(static_cast<double>(rate[i]), next));
  }
}

} // namespace

// dropout, random_draw, random_bernoulli and random_poisson.
void random(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::RandomDraw: return randomDraw(node, inputs, outputs);
  case ir::OpKind::RandomBernoulli: return randomBernoulli(node, inputs, outputs);
  case ir::OpKind::RandomPoisson: return randomPoisson(node, inputs, outputs);
  default: return dropout(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
