#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

// Random numbers drawn on the device, as dropout draws its masks: each
// element is a function of (seed, stream, counter, element index), so a
// program run with the same seed repeats its draws, every micro-batch
// (counter) gets fresh ones, and every op (stream) its own.
namespace popsim::ir::ops {
namespace {

void checkCounter(const TensorType& counter, const char* what) {
  requireDType(counter, DType::Int64, what);
  requireRank(counter, 0, what);
}

// random_draw(counter) {distribution, params, shape, seed, stream} -> a
// tensor of `shape`: "uniform" in [low, high), "normal" (mean, std),
// "exponential" (rate), "bernoulli" (p), all float32, or "integers" in
// [low, high) as int64.
std::vector<TensorType> inferRandomDraw(const std::vector<TensorType>& inputs,
                                        const Attributes& attrs) {
  checkCounter(inputs[0], "input 0 (counter)");
  const std::string& distribution = attrs.getString("distribution");
  const std::vector<double>& params = attrs.getFloats("params");
  const bool known = distribution == "uniform" || distribution == "normal" ||
                     distribution == "exponential" || distribution == "bernoulli" ||
                     distribution == "integers";
  POPSIM_CHECK(known, ErrorKind::Compilation, "unknown distribution \"", distribution, "\".");
  const size_t expected = distribution == "exponential" || distribution == "bernoulli" ? 1 : 2;
  POPSIM_CHECK(params.size() == expected, ErrorKind::Compilation, "distribution \"", distribution,
               "\" takes ", expected, " parameters, got ", params.size(), ".");
  const Shape& shape = attrs.getInts("shape");
  return {{distribution == "integers" ? DType::Int64 : DType::Float32, shape}};
}

// random_bernoulli(P, counter) {seed, stream} -> 1.0 with probability P and
// 0.0 otherwise, per element (float32, P's shape).
std::vector<TensorType> inferRandomBernoulli(const std::vector<TensorType>& inputs,
                                             const Attributes&) {
  requireFloat(inputs[0], "input 0 (p)");
  checkCounter(inputs[1], "input 1 (counter)");
  return {inputs[0]};
}

// random_poisson(RATE, counter) {seed, stream} -> a Poisson count of mean
// RATE per element (float32, RATE's shape).
std::vector<TensorType> inferRandomPoisson(const std::vector<TensorType>& inputs,
                                           const Attributes&) {
  requireDType(inputs[0], DType::Float32, "input 0 (rate)");
  checkCounter(inputs[1], "input 1 (counter)");
  return {inputs[0]};
}

// dropout(X, counter) -> (Y, mask): mask holds 0 or 1/(1-p) per element,
// drawn from (seed, stream, counter, element index); Y = X * mask.
std::vector<TensorType> inferDropout(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (input)");
  requireDType(inputs[1], DType::Int64, "input 1 (counter)");
  requireRank(inputs[1], 0, "input 1 (counter)");
  const double p = attrs.getFloat("p");
  POPSIM_CHECK(p >= 0.0 && p < 1.0, ErrorKind::Compilation,
               "dropout probability must be in [0, 1), got ", p, ".");
  return {inputs[0], inputs[0]};
}

Grads dropoutGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "a dropout mask reaches the loss.");
  return {b.emit(OpKind::Mul, {g[0], out(b, 1)}), nullptr};
}

// Random draws: PyTorch gives bernoulli's probabilities a zero gradient.
Grads noGradientGradient(GradientBuilder& b, const Grads&, const Needed&) { return none(b); }

} // namespace

void registerRandomOps(OpRegistry& registry) {
  registry.add(OpKind::RandomDraw, 1, 1, {"counter"},
               {{"distribution", AttrType::String},
                {"params", AttrType::Floats},
                {"shape", AttrType::Ints},
                {"seed", AttrType::Int},
                {"stream", AttrType::Int}},
               inferRandomDraw);
  registry.add(OpKind::RandomBernoulli, 2, 2, {"p", "counter"},
               {{"seed", AttrType::Int}, {"stream", AttrType::Int}}, inferRandomBernoulli);
  registry.add(OpKind::RandomPoisson, 2, 2, {"rate", "counter"},
               {{"seed", AttrType::Int}, {"stream", AttrType::Int}}, inferRandomPoisson);
  registry.add(OpKind::Dropout, 2, 2, {"input", "counter"},
               {{"p", AttrType::Float}, {"seed", AttrType::Int}, {"stream", AttrType::Int}},
               inferDropout);
  registry.setGradient(OpKind::Dropout, dropoutGradient);
  registry.setGradient(OpKind::RandomDraw, noGradientGradient);
  registry.setGradient(OpKind::RandomBernoulli, noGradientGradient);
  registry.setGradient(OpKind::RandomPoisson, noGradientGradient);
  registry.setWork(OpKind::Dropout, work::elementwise<1>);
  registry.setWork(OpKind::RandomDraw, work::elementwise<1>);
  registry.setWork(OpKind::RandomBernoulli, work::elementwise<1>);
  // A Poisson count takes a few draws and logarithms per element (the
  // rejection sampler below accepts about nine in ten of its candidates).
  registry.setWork(OpKind::RandomPoisson, work::elementwise<4>);
}

} // namespace popsim::ir::ops
