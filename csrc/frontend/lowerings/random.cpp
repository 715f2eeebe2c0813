// Random ops drawn on the device from the options' random seed, fresh for
// every micro-batch (ir/ops/random.cpp; a torch.Generator argument cannot be
// traced): rand, randn, randint and their
// _like forms, normal, bernoulli, the in-place uniform_, normal_,
// exponential_, cauchy_, log_normal_, geometric_, random_ and bernoulli_, multinomial,
// poisson, randperm, and empty / empty_like / new_empty (whose
// contents PyTorch leaves undefined: popsim fills them with zeros).

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cmath>

#include <limits>

namespace popsim::frontend::lowerings {
namespace {

double doubleArgument(LoweringContext& ctx, const char* name, double fallback) {
  const std::optional<size_t> index = ctx.argumentIndex(name);
  return index.has_value() && !ctx.isNone(*index) ? ctx.toDouble(*index) : fallback;
}

ir::Value* draw(LoweringContext& ctx, const char* distribution, std::vector<double> params,
                const ir::Shape& shape) {
  return ctx.emit(ir::OpKind::RandomDraw, {ctx.randomCounter()},
                  {{"distribution", std::string(distribution)},
                   {"params", std::move(params)},
                   {"shape", shape},
                   {"seed", ctx.randomSeed()},
                   {"stream", ctx.nextRandomStream()}});
}

// The shape of a random tensor: the `size` argument, or self's for _like forms.
ir::Shape shapeArgument(LoweringContext& ctx) {
  const std::optional<size_t> size = ctx.argumentIndex("size");
  return size.has_value() ? ctx.toIntList(*size) : ctx.tensor(0)->type().shape;
}

ir::DType likeDType(LoweringContext& ctx, ir::DType fallback) {
  return ctx.argumentIndex("size").has_value() && ctx.opName() != "aten::new_empty"
             ? fallback
             : ctx.tensor(0)->type().dtype;
}

// rand / rand_like: uniform in [0, 1); randn / randn_like: standard normal.
template <bool Normal> void lowerRand(LoweringContext& ctx) {
  const ir::DType dtype = dtypeArgument(ctx).value_or(likeDType(ctx, ir::DType::Float32));
  if (!ir::isFloat(dtype)) {
    ctx.unsupported(std::string(Normal ? "randn" : "rand") +
                    " of an integer dtype (PyTorch draws floating-point numbers only)");
  }
  // float16: drawn in float32 and rounded. A uniform draw is scaled into
  // [0, 1 - 2^-12) first, so that no value rounds up to 1 (rand stays in [0, 1)).
  const double top = dtype == ir::DType::Float16 && !Normal ? 1.0 - std::ldexp(1.0, -12) : 1.0;
  ctx.setOutput(
      0,
      castTo(ctx, draw(ctx, Normal ? "normal" : "uniform", {0.0, top}, shapeArgument(ctx)), dtype));
}

// randint(high, size) / randint(low, high, size) and randint_like: integers
// in [low, high), int64 unless a dtype is given.
void lowerRandint(LoweringContext& ctx) {
  const double high = ctx.toDouble(*ctx.argumentIndex("high"));
  const double low = doubleArgument(ctx, "low", 0.0);
  if (!(low < high)) {
    ctx.unsupported("randint with low " + std::to_string(low) + " >= high " + std::to_string(high) +
                    " (the range [low, high) must not be empty)");
  }
  const bool like = !ctx.argumentIndex("size").has_value();
  const ir::DType dtype =
      dtypeArgument(ctx).value_or(like ? ctx.tensor(0)->type().dtype : ir::DType::Int64);
  ctx.setOutput(0, castTo(ctx, draw(ctx, "integers", {low, high}, shapeArgument(ctx)), dtype));
}

// The value an in-place random op writes into self, in self's dtype.
void writeIntoSelf(LoweringContext& ctx, ir::Value* value) {
  ctx.setOutput(0, castTo(ctx, value, ctx.tensor(0)->type().dtype));
}

// uniform_(self, from=0, to=1), normal_(self, mean=0, std=1), exponential_(self, lambd=1).
void lowerUniformInPlace(LoweringContext& ctx) {
  const double from = doubleArgument(ctx, "from", 0.0), to = doubleArgument(ctx, "to", 1.0);
  writeIntoSelf(ctx, draw(ctx, "uniform", {from, to}, ctx.tensor(0)->type().shape));
}

void lowerNormalInPlace(LoweringContext& ctx) {
  const double mean = doubleArgument(ctx, "mean", 0.0), std = doubleArgument(ctx, "std", 1.0);
  if (std < 0.0) ctx.unsupported("normal_ with std " + std::to_string(std) + " < 0");
  writeIntoSelf(ctx, draw(ctx, "normal", {mean, std}, ctx.tensor(0)->type().shape));
}

void lowerExponentialInPlace(LoweringContext& ctx) {
  const double rate = doubleArgument(ctx, "lambd", 1.0);
  if (!(rate > 0.0)) ctx.unsupported("exponential_ with lambd " + std::to_string(rate) + " <= 0");
  writeIntoSelf(ctx, draw(ctx, "exponential", {rate}, ctx.tensor(0)->type().shape));
}

// random_(self), random_(self, to), random_(self, from, to=None): integers
// uniform in [from, to), in self's dtype. Without `to` PyTorch goes up to
// the largest integer the dtype holds exactly, inclusive: 2^24 for float32,
// 2^11 for float16, the maximum for integers (1 for bool).
void lowerRandomInPlace(LoweringContext& ctx) {
  const ir::DType dtype = ctx.tensor(0)->type().dtype;
  const double low = doubleArgument(ctx, "from", 0.0);
  double high = doubleArgument(ctx, "to", std::numeric_limits<double>::quiet_NaN());
  if (std::isnan(high)) {
    switch (dtype) {
    case ir::DType::Float32: high = std::ldexp(1.0, 24) + 1; break;
    case ir::DType::Float16: high = std::ldexp(1.0, 11) + 1; break;
    case ir::DType::Float64: high = std::ldexp(1.0, 53) + 1; break;
    case ir::DType::Int32: high = std::ldexp(1.0, 31); break;
    case ir::DType::Bool: high = 2; break;
    default: high = std::ldexp(1.0, 63); break; // int64
    }
  }
  if (!(low < high)) {
    ctx.unsupported("random_ from " + std::to_string(low) + " to " + std::to_string(high) +
                    " (the range [from, to) must not be empty)");
  }
  writeIntoSelf(ctx, draw(ctx, "integers", {low, high}, ctx.tensor(0)->type().shape));
}

// cauchy_(self, median=0, sigma=1): median + sigma tan(pi (u - 1/2)) of a
// uniform draw u, the inverse of Cauchy's distribution function.
void lowerCauchyInPlace(LoweringContext& ctx) {
  const double median = doubleArgument(ctx, "median", 0.0);
  const double sigma = doubleArgument(ctx, "sigma", 1.0);
  constexpr double kHalfPi = 1.57079632679489661923;
  ir::Value* angle = draw(ctx, "uniform", {-kHalfPi, kHalfPi}, ctx.tensor(0)->type().shape);
  writeIntoSelf(ctx, affine(ctx, emitPointwise(ctx, angle, "tan"), sigma, median));
}

// log_normal_(self, mean=1, std=2): exp of a normal draw (eager refused std <= 0 while tracing).
void lowerLogNormalInPlace(LoweringContext& ctx) {
  const double mean = doubleArgument(ctx, "mean", 1.0), std = doubleArgument(ctx, "std", 2.0);
  ir::Value* normal = draw(ctx, "normal", {mean, std}, ctx.tensor(0)->type().shape);
  writeIntoSelf(ctx, ctx.emit(ir::OpKind::Exp, {normal}));
}

// geometric_(self, p): the number of Bernoulli(p) trials up to the first
// success, ceil(log(u) / log(1 - p)) of a uniform draw u in (0, 1] (at
// least 1; eager refused p outside (0, 1) while tracing).
void lowerGeometricInPlace(LoweringContext& ctx) {
  const double p = ctx.toDouble(1);
  ir::Value* u =
      affine(ctx, draw(ctx, "uniform", {0.0, 1.0}, ctx.tensor(0)->type().shape), -1.0, 1.0);
  ir::Value* trials = emitPointwise(
      ctx, affine(ctx, ctx.emit(ir::OpKind::Log, {u}), 1.0 / std::log1p(-p), 0.0), "ceil");
  writeIntoSelf(ctx, emitBinary(ctx, "clamp_min", trials, floatScalar(ctx, 1.0)));
}

// randperm(n, dtype=int64): the order that sorts n uniform draws, a
// permutation drawn uniformly (not eager's: popsim draws its own numbers).
void lowerRandperm(LoweringContext& ctx) {
  const int64_t n = ctx.toInt(0);
  const ir::DType dtype = dtypeArgument(ctx).value_or(ir::DType::Int64);
  if (n == 0) return ctx.setOutput(0, constantFilled(ctx, {dtype, {0}}, 0.0));
  const std::vector<ir::Value*> sorted =
      ctx.emitMulti(ir::OpKind::Sort, {draw(ctx, "uniform", {0.0, 1.0}, {n})},
                    {{"dim", int64_t{0}}, {"descending", false}});
  ctx.setOutput(0, castTo(ctx, sorted[1], dtype));
}

// normal(mean, std) with either a tensor (broadcast together), or two numbers and a size.
void lowerNormal(LoweringContext& ctx) {
  const bool meanTensor = ctx.isTensor(0), stdTensor = ctx.isTensor(1);
  if (!meanTensor && !stdTensor) {
    const double std = ctx.toDouble(1);
    ctx.setOutput(0, draw(ctx, "normal", {ctx.toDouble(0), std}, ctx.toIntList(2)));
    return;
  }
  ir::Shape shape = meanTensor ? ctx.tensor(0)->type().shape : ctx.tensor(1)->type().shape;
  if (meanTensor && stdTensor) {
    const auto both = ir::broadcastShapes(ctx.tensor(0)->type().shape, ctx.tensor(1)->type().shape);
    if (!both.has_value()) ctx.unsupported("mean and std tensors that do not broadcast together");
    shape = *both;
  }
  ir::Value* standard = draw(ctx, "normal", {0.0, 1.0}, shape);
  ir::Value* scaled = ctx.emit(ir::OpKind::Mul, {standard, operandAs(ctx, 1, ir::DType::Float32)});
  ir::Value* sample = ctx.emit(ir::OpKind::Add, {scaled, operandAs(ctx, 0, ir::DType::Float32)});
  // PyTorch gives the result the dtype of mean when it is a tensor, else std's.
  const ir::DType dtype = ctx.tensor(meanTensor ? 0 : 1)->type().dtype;
  if (ir::isFloat(dtype) && dtype != ir::DType::Float32) {
    sample = ctx.emit(ir::OpKind::Cast, {sample}, {{"dtype", std::string(ir::dtypeName(dtype))}});
  }
  ctx.setOutput(0, sample);
}

// bernoulli(self) with self's elements as probabilities; bernoulli(self, p)
// and bernoulli_(self, p) with p a number or a tensor (broadcast to self).
// Probabilities outside [0, 1] are an error, as in PyTorch.
void lowerBernoulli(LoweringContext& ctx) {
  ir::Value* self = ctx.tensor(0);
  const std::optional<size_t> pIndex = ctx.argumentIndex("p");
  ir::Value* result = nullptr;
  if (pIndex.has_value() && !ctx.isTensor(*pIndex)) {
    const double p = ctx.isNone(*pIndex) ? 0.5 : ctx.toDouble(*pIndex);
    if (!(p >= 0.0 && p <= 1.0)) {
      ctx.unsupported("bernoulli with p=" + std::to_string(p) + "; p must be between 0 and 1");
    }
    result = draw(ctx, "bernoulli", {p}, self->type().shape);
  } else {
    ir::Value* p = pIndex.has_value() ? operandAs(ctx, *pIndex, ir::DType::Float32)
                                      : castTo(ctx, self, ir::DType::Float32);
    if (p->type().shape != self->type().shape) {
      p = ctx.emit(ir::OpKind::Broadcast, {p}, {{"shape", self->type().shape}});
    }
    p = ctx.emit(
        ir::OpKind::CheckRange, {p},
        {{"min", 0.0},
         {"max", 1.0},
         {"what",
          std::string("bernoulli: every probability must be between 0 and 1 (PyTorch raises for "
                      "this too)")}});
    result = ctx.emit(ir::OpKind::RandomBernoulli, {p, ctx.randomCounter()},
                      {{"seed", ctx.randomSeed()}, {"stream", ctx.nextRandomStream()}});
  }
  ctx.setOutput(0, castTo(ctx, result, self->type().dtype)); // every form keeps self's dtype
}

// poisson(self): a Poisson count of mean self per element, in self's dtype
// (torch.distributions.Poisson samples with it). A negative or NaN rate
// stops the run, as PyTorch raises for it; an infinite rate gives inf.
void lowerPoisson(LoweringContext& ctx) {
  ir::Value* self = ctx.tensor(0);
  if (!ir::isFloat(self->type().dtype)) {
    ctx.unsupported("poisson of a " + self->type().str() + " tensor (PyTorch takes float rates)");
  }
  ir::Value* rate = ctx.emit(
      ir::OpKind::CheckRange, {castTo(ctx, self, ir::DType::Float32)},
      {{"min", 0.0},
       {"max", std::numeric_limits<double>::infinity()},
       {"what", std::string("poisson: every rate must be non-negative (PyTorch raises for this "
                            "too)")}});
  ir::Value* counts = ctx.emit(ir::OpKind::RandomPoisson, {rate, ctx.randomCounter()},
                               {{"seed", ctx.randomSeed()}, {"stream", ctx.nextRandomStream()}});
  ctx.setOutput(0, castTo(ctx, counts, self->type().dtype));
}

// multinomial(self [C] or [N, C], num_samples, replacement=False): each
// sample the first category whose cumulative probability (normalised per
// row) exceeds a uniform draw; without replacement, drawn one at a time with
// the categories already drawn given probability 0. The draws are not
// eager's, but follow the same distribution.
void lowerMultinomial(LoweringContext& ctx) {
  ir::Value* p = floatOperand(ctx, 0);
  const bool single = p->type().rank() == 1;
  if (single) p = reshape(ctx, p, {1, p->type().shape[0]});
  if (p->type().rank() != 2) ctx.unsupported("multinomial of a tensor of rank > 2");
  const int64_t rows = p->type().shape[0], categories = p->type().shape[1];
  const int64_t samples = ctx.toInt(1);
  const bool replacement = ctx.numInputs() > 2 && ctx.toBool(2);
  if (samples <= 0 || (!replacement && samples > categories)) {
    ctx.unsupported("multinomial of " + std::to_string(samples) + " samples from " +
                    std::to_string(categories) + " categories" +
                    (replacement ? std::string() : std::string(" without replacement")));
  }
  p = ctx.emit(
      ir::OpKind::StopGradient,
      {ctx.emit(ir::OpKind::CheckRange, {p},
                {{"min", 0.0},
                 {"max", std::numeric_limits<double>::infinity()},
                 {"what", std::string("multinomial: every probability must be finite "
                                      "and non-negative (PyTorch raises for this too)")}})},
      {});
  // The category of draws u [rows, n] from probabilities q [rows, C]: how
  // many cumulative probabilities lie at or below u (at most C - 1).
  const auto categoryOf = [&](ir::Value* q, int64_t n) {
    ir::Value* total = ctx.emit(
        ir::OpKind::CheckRange,
        {ctx.emit(ir::OpKind::ReduceSum, {q},
                  {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}})},
        {{"min", static_cast<double>(std::numeric_limits<float>::denorm_min())},
         {"max", std::numeric_limits<double>::infinity()},
         {"what", std::string("multinomial: the probabilities of a row sum to 0 (without "
                              "replacement: fewer non-zero categories than samples; PyTorch "
                              "raises for this too)")}});
    ir::Value* cdf = ctx.emit(ir::OpKind::CumulativeSum, {ctx.emit(ir::OpKind::Div, {q, total})},
                              {{"dim", int64_t{1}}, {"reverse", false}});
    ir::Value* u = draw(ctx, "uniform", {0.0, 1.0}, {rows, n, 1});
    ir::Value* below = emitBinary(ctx, "le", reshape(ctx, cdf, {rows, 1, categories}), u);
    ir::Value* count = ctx.emit(ir::OpKind::ReduceSum, {castTo(ctx, below, ir::DType::Int64)},
                                {{"dims", std::vector<int64_t>{2}}, {"keepdim", false}});
    return emitBinary(
        ctx, "clamp_max", count,
        constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(categories - 1)));
  };
  ir::Value* result = nullptr;
  if (replacement) {
    result = categoryOf(p, samples);
  } else {
    std::vector<ir::Value*> drawn;
    ir::Value* remaining = p;
    ir::Value* ids = ctx.emit(ir::OpKind::CumulativeSum,
                              {constantFilled(ctx, {ir::DType::Int64, {1, categories}}, 1.0)},
                              {{"dim", int64_t{1}}, {"reverse", false}}); // 1..C
    for (int64_t k = 0; k < samples; ++k) {
      ir::Value* pick = categoryOf(remaining, 1); // [rows, 1]
      drawn.push_back(pick);
      ir::Value* chosen = emitBinary(
          ctx, "eq", ids,
          emitBinary(ctx, "add", pick, constantFilled(ctx, {ir::DType::Int64, {}}, 1.0)));
      remaining = ctx.emit(ir::OpKind::Where, {chosen, floatScalar(ctx, 0.0), remaining});
    }
    result =
        drawn.size() == 1 ? drawn[0] : ctx.emit(ir::OpKind::Concat, drawn, {{"dim", int64_t{1}}});
  }
  ctx.setOutput(0, single ? reshape(ctx, result, {samples}) : result);
}

// empty / new_empty(size) and empty_like of runtime tensors: zeros of the
// dtype asked (PyTorch leaves the contents undefined; the importer zeroes
// the ones it evaluates at compile time too).
void lowerEmpty(LoweringContext& ctx) {
  const ir::DType dtype = dtypeArgument(ctx).value_or(likeDType(ctx, ir::DType::Float32));
  ctx.setOutput(0, constantFilled(ctx, {dtype, shapeArgument(ctx)}, 0.0));
}

} // namespace

ir::Value* uniformDraw(LoweringContext& ctx, double low, double high, const ir::Shape& shape) {
  return draw(ctx, "uniform", {low, high}, shape);
}

void registerRandom(LoweringRegistry& registry) {
  registry.add("aten::rand", lowerRand<false>);
  registry.add("aten::rand_like", lowerRand<false>);
  registry.add("aten::randn", lowerRand<true>);
  registry.add("aten::randn_like", lowerRand<true>);
  registry.add("aten::randint", lowerRandint);
  registry.add("aten::randint_like", lowerRandint);
  registry.add("aten::normal", lowerNormal);
  registry.add("aten::normal_", lowerNormalInPlace);
  registry.add("aten::uniform_", lowerUniformInPlace);
  registry.add("aten::exponential_", lowerExponentialInPlace);
  registry.add("aten::cauchy_", lowerCauchyInPlace);
  registry.add("aten::log_normal_", lowerLogNormalInPlace);
  registry.add("aten::geometric_", lowerGeometricInPlace);
  registry.add("aten::random_", lowerRandomInPlace);
  registry.add("aten::randperm", lowerRandperm);
  registry.add("aten::bernoulli", lowerBernoulli);
  registry.add("aten::bernoulli_", lowerBernoulli);
  registry.add("aten::multinomial", lowerMultinomial);
  registry.add("aten::poisson", lowerPoisson);
  registry.add("aten::empty", lowerEmpty);
  registry.add("aten::empty_like", lowerEmpty);
  registry.add("aten::new_empty", lowerEmpty);
}

} // namespace popsim::frontend::lowerings
