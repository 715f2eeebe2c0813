// The aten ops that are functions of ir/pointwise_functions.h: one line each,
// naming the function and where each of its parameters comes from.

#include "common/check.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"
#include "ir/pointwise_formulas.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace popsim::frontend::lowerings {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kFloatMax = std::numeric_limits<float>::max();
constexpr double kHalfMax = 65504.0; // the largest finite float16

// A parameter: the aten argument it is read from (a number known at compile
// time), or nullptr for a constant; `fallback` when the argument is None or
// the op has no such argument.
struct Parameter {
  const char* argument;
  double fallback;
};

struct AtenPointwise {
  const char* op; // also registered with a trailing "_" (the in-place form), but torch.special's
  const char* function;
  std::vector<Parameter> parameters;
};

const std::vector<AtenPointwise>& atenPointwiseOps() {
  static const std::vector<AtenPointwise> ops = {
      {"aten::reciprocal", "reciprocal", {}},
      {"aten::rsqrt", "rsqrt", {}},
      {"aten::expm1", "expm1", {}},
      {"aten::log1p", "log1p", {}},
      {"aten::log2", "log2", {}},
      {"aten::log10", "log10", {}},
      {"aten::sin", "sin", {}},
      {"aten::cos", "cos", {}},
      {"aten::tan", "tan", {}},
      {"aten::asin", "asin", {}},
      {"aten::acos", "acos", {}},
      {"aten::atan", "atan", {}},
      {"aten::sinh", "sinh", {}},
      {"aten::cosh", "cosh", {}},
      {"aten::asinh", "asinh", {}},
      {"aten::acosh", "acosh", {}},
      {"aten::atanh", "atanh", {}},
      {"aten::erf", "erf", {}},
      {"aten::erfc", "erfc", {}},
      {"aten::erfinv", "erfinv", {}},
      {"aten::lgamma", "lgamma", {}},
      {"aten::special_gammaln", "lgamma", {}},
      {"aten::digamma", "digamma", {}},
      {"aten::special_digamma", "digamma", {}},
      {"aten::special_psi", "digamma", {}},
      {"aten::special_entr", "entr", {}},
      {"aten::special_erfcx", "erfcx", {}},
      {"aten::special_log_ndtr", "log_ndtr", {}},
      {"aten::special_ndtri", "ndtri", {}},
      {"aten::i0", "i0", {}},
      {"aten::special_i0", "i0", {}},
      {"aten::special_i0e", "i0e", {}},
      {"aten::special_i1", "i1", {}},
      {"aten::special_i1e", "i1e", {}},
      {"aten::logit", "logit", {{"eps", -1.0}}},
      {"aten::special_logit", "logit", {{"eps", -1.0}}},
      {"aten::sinc", "sinc", {}},
      {"aten::special_sinc", "sinc", {}},
      {"aten::special_ndtr", "ndtr", {}},
      {"aten::exp2", "rpow", {{nullptr, 2.0}}},
      {"aten::special_exp2", "rpow", {{nullptr, 2.0}}},
      {"aten::sign", "sign", {}},
      {"aten::sgn", "sign", {}},    // of real numbers, sign's
      {"aten::angle", "angle", {}}, // of real numbers
      {"aten::floor", "floor", {}},
      {"aten::ceil", "ceil", {}},
      {"aten::round", "round", {}},
      {"aten::trunc", "trunc", {}},
      {"aten::frac", "frac", {}},
      {"aten::square", "pow", {{nullptr, 2.0}}},
      {"aten::clamp", "clamp", {{"min", -kInfinity}, {"max", kInfinity}}},
      {"aten::clip", "clamp", {{"min", -kInfinity}, {"max", kInfinity}}},
      {"aten::clamp_min", "clamp", {{"min", -kInfinity}, {nullptr, kInfinity}}},
      {"aten::clamp_max", "clamp", {{nullptr, -kInfinity}, {"max", kInfinity}}},
      {"aten::hardtanh", "hardtanh", {{"min_val", -1.0}, {"max_val", 1.0}}},
      {"aten::relu6", "hardtanh", {{nullptr, 0.0}, {nullptr, 6.0}}},
      {"aten::silu", "silu", {}},
      {"aten::mish", "mish", {}},
      {"aten::hardswish", "hardswish", {}},
      {"aten::hardsigmoid", "hardsigmoid", {}},
      {"aten::elu", "elu", {{"alpha", 1.0}, {"scale", 1.0}, {"input_scale", 1.0}}},
      {"aten::selu", "selu", {}},
      {"aten::celu", "celu", {{"alpha", 1.0}}},
      {"aten::leaky_relu", "leaky_relu", {{"negative_slope", 0.01}}},
      {"aten::softplus", "softplus", {{"beta", 1.0}, {"threshold", 20.0}}},
      {"aten::log_sigmoid", "log_sigmoid", {}},
      {"aten::hardshrink", "hardshrink", {{"lambd", 0.5}}},
      {"aten::softshrink", "softshrink", {{"lambd", 0.5}}},
      {"aten::threshold", "threshold", {{"threshold", 0.0}, {"value", 0.0}}},
      {"aten::nan_to_num",
       "nan_to_num",
       {{"nan", 0.0}, {"posinf", kFloatMax}, {"neginf", -kFloatMax}}},
  };
  return ops;
}

const AtenPointwise& tableEntryOf(const std::string& opName) {
  const std::string name =
      !opName.empty() && opName.back() == '_' ? opName.substr(0, opName.size() - 1) : opName;
  for (const AtenPointwise& op : atenPointwiseOps()) {
    if (name == op.op) return op;
  }
  POPSIM_ASSERT(false, opName, " is not in the pointwise lowering table.");
}

// The argument behind a parameter when it is a tensor computed at runtime.
std::optional<size_t> runtimeTensorArgument(const LoweringContext& ctx,
                                            const Parameter& parameter) {
  const std::optional<size_t> index =
      parameter.argument != nullptr ? ctx.argumentIndex(parameter.argument) : std::nullopt;
  if (!index.has_value() || ctx.isNone(*index) || ctx.staticScalar(*index).has_value() ||
      !ctx.isTensor(*index)) {
    return std::nullopt;
  }
  return index;
}

bool isWhole(double value) { return std::isfinite(value) && value == std::trunc(value); }

// The functions PyTorch computes exactly on integer and bool tensors, in
// their dtype: rounding (the identity), sign, square (bool to int64), and
// clamps and hardtanh with whole bounds; nullptr for the others, which
// PyTorch computes on the tensor converted to float32.
ir::Value* integerPointwise(LoweringContext& ctx, ir::Value* x, const std::string& function,
                            const std::vector<double>& params) {
  const ir::DType dtype = x->type().dtype;
  const bool boolean = dtype == ir::DType::Bool;
  const auto constant = [&](double value) { return constantFilled(ctx, {dtype, {}}, value); };
  if (function == "floor" || function == "ceil" || function == "round" || function == "trunc" ||
      function == "nan_to_num") {
    return x;
  }
  if (function == "sign") {
    if (boolean) return x;
    return emitBinary(ctx, "sub", castTo(ctx, emitBinary(ctx, "gt", x, constant(0.0)), dtype),
                      castTo(ctx, emitBinary(ctx, "lt", x, constant(0.0)), dtype));
  }
  if (function == "pow" && params[0] == 2.0) { // square
    ir::Value* base = boolean ? castTo(ctx, x, ir::DType::Int64) : x;
    return emitBinary(ctx, "mul", base, base);
  }
  const bool bounded = function == "clamp" || (function == "hardtanh" && !boolean);
  if (bounded && (isWhole(params[0]) || std::isinf(params[0])) &&
      (isWhole(params[1]) || std::isinf(params[1]))) {
    // A bool tensor clamped by whole numbers promotes to int64, as in PyTorch.
    const ir::DType result = boolean ? ir::DType::Int64 : dtype;
    const auto bound = [&](double value) { return constantFilled(ctx, {result, {}}, value); };
    x = castTo(ctx, x, result);
    if (!std::isinf(params[0])) x = emitBinary(ctx, "clamp_min", x, bound(params[0]));
    if (!std::isinf(params[1])) x = emitBinary(ctx, "clamp_max", x, bound(params[1]));
    return x;
  }
  return nullptr;
}

void lowerTableOp(LoweringContext& ctx) {
  const AtenPointwise& op = tableEntryOf(ctx.opName());
  if (std::string(op.function) == "clamp") { // bounds given as tensors
    const auto low = runtimeTensorArgument(ctx, op.parameters[0]);
    const auto high = runtimeTensorArgument(ctx, op.parameters[1]);
    if (low.has_value() || high.has_value()) {
      const auto index = [&](const Parameter& parameter) -> std::optional<size_t> {
        const auto i = parameter.argument ? ctx.argumentIndex(parameter.argument) : std::nullopt;
        return i.has_value() && !ctx.isNone(*i) ? i : std::nullopt;
      };
      ctx.setOutput(0, clampBetweenTensors(ctx, index(op.parameters[0]), index(op.parameters[1])));
      return;
    }
  }
  ir::Value* x = ctx.tensor(0);
  std::vector<double> params;
  for (const Parameter& parameter : op.parameters) {
    const std::optional<size_t> index =
        parameter.argument != nullptr ? ctx.argumentIndex(parameter.argument) : std::nullopt;
    if (!index.has_value() || ctx.isNone(*index)) {
      // nan_to_num's default bounds are the largest finite values of x's dtype.
      const bool halfBound =
          x->type().dtype == ir::DType::Float16 && std::abs(parameter.fallback) == kFloatMax;
      params.push_back(halfBound ? std::copysign(kHalfMax, parameter.fallback)
                                 : parameter.fallback);
      continue;
    }
    const std::optional<double> value = ctx.staticScalar(*index);
    if (!value.has_value()) {
      ctx.unsupported(std::string("argument '") + parameter.argument +
                      "' as a tensor computed at runtime (popsim takes a number here)");
    }
    params.push_back(*value);
  }
  if (!ir::isFloat(x->type().dtype)) {
    if (ir::Value* exact = integerPointwise(ctx, x, op.function, params)) {
      ctx.setOutput(0, exact);
      return;
    }
    x = floatOperand(ctx, 0);
  }
  ctx.setOutput(0, emitPointwise(ctx, x, op.function, std::move(params)));
}

// deg2rad and rad2deg: x times pi / 180 or 180 / pi, in x's float dtype
// (integer tensors give float32), as PyTorch multiplies.
void lowerAngleUnits(LoweringContext& ctx) {
  const bool toRadians = ctx.opName().rfind("aten::deg2rad", 0) == 0;
  const double factor = toRadians ? M_PI / 180.0 : 180.0 / M_PI;
  ctx.setOutput(0, inPlaceResult(ctx, affine(ctx, floatOperand(ctx, 0), factor, 0.0)));
}

// aten::pow: float tensor ** number (pow), number ** float tensor (rpow);
// two tensors, and integer tensors, through the binary function pow.
void lowerPow(LoweringContext& ctx) {
  const std::optional<double> base = ctx.staticScalar(0);
  const std::optional<double> exponent = ctx.staticScalar(1);
  const bool floatFirst = ctx.isTensor(0) && ir::isFloat(ctx.tensor(0)->type().dtype);
  const bool floatSecond = ctx.isTensor(1) && ir::isFloat(ctx.tensor(1)->type().dtype);
  ir::Value* y = nullptr;
  if (exponent.has_value() && !base.has_value() && floatFirst) {
    y = emitPointwise(ctx, ctx.tensor(0), "pow", {*exponent});
  } else if (base.has_value() && !exponent.has_value() && floatSecond) {
    y = emitPointwise(ctx, ctx.tensor(1), "rpow", {*base});
  } else {
    y = emitBinaryFunction(ctx, "pow", 0, 1);
  }
  ctx.setOutput(0, inPlaceResult(ctx, y));
}

// float_power: pow in double precision, whose float64 result popsim computes
// as float32 (as it computes every float64 op, with the warning that says
// so); the power formulas run in double and round once, so each element is
// eager's double result rounded to float32.
void lowerFloatPower(LoweringContext& ctx) {
  const std::optional<double> base = ctx.staticScalar(0);
  const std::optional<double> exponent = ctx.staticScalar(1);
  const auto asFloat = [&](size_t index) { return operandAs(ctx, index, ir::DType::Float32); };
  ir::Value* y = nullptr;
  if (exponent.has_value() && !base.has_value()) {
    y = emitPointwise(ctx, asFloat(0), "pow", {*exponent});
  } else if (base.has_value() && !exponent.has_value()) {
    y = emitPointwise(ctx, asFloat(1), "rpow", {*base});
  } else {
    y = emitBinary(ctx, "pow", asFloat(0), asFloat(1));
  }
  ctx.setOutput(0, inPlaceResult(ctx, y));
}

// torch.special.modified_bessel_i0 and _i1 (PyTorch 1.13's second spelling
// of i0 and i1, with the same values): results that autograd treats as
// constants, as PyTorch 1.13 defines no derivative for them.
void lowerModifiedBessel(LoweringContext& ctx) {
  const bool orderOne = ctx.opName() == "aten::special_modified_bessel_i1";
  ir::Value* y = emitPointwise(ctx, floatOperand(ctx, 0), orderOne ? "i1" : "i0");
  ctx.setOutput(0, ctx.emit(ir::OpKind::StopGradient, {y}));
}

// torch.special's other Bessel functions (bessel_j0/j1/y0/y1,
// modified_bessel_k0/k1, scaled_modified_bessel_k0/k1, spherical_bessel_j0)
// and airy_ai: constants to autograd, as PyTorch 1.13 defines no derivative
// for them.
void lowerBesselWithoutDerivative(LoweringContext& ctx) {
  const std::string function = ctx.opName().substr(std::string("aten::special_").size());
  ir::Value* y = emitPointwise(ctx, floatOperand(ctx, 0), function.c_str());
  ctx.setOutput(0, ctx.emit(ir::OpKind::StopGradient, {y}));
}

// torch.special's orthogonal polynomials (chebyshev_polynomial_t/u/v/w and
// their shifted forms, hermite_polynomial_h/he, laguerre_polynomial_l,
// legendre_polynomial_p) of x and a degree n: one degree per op, a number or
// a 0-d tensor known when the model compiles, truncated to an integer as
// PyTorch truncates it. Constants to autograd, as PyTorch 1.13 defines no
// derivative for them.
void lowerOrthogonalPolynomial(LoweringContext& ctx) {
  const std::string function = ctx.opName().substr(std::string("aten::special_").size());
  if (!ctx.isTensor(0)) {
    ctx.unsupported(function + " of a number x with a tensor of degrees n; popsim takes x as a "
                               "tensor and n as one number");
  }
  const std::optional<double> degree = ctx.staticScalar(1);
  if (!degree.has_value()) {
    ctx.unsupported(function +
                    " with the degree n as a tensor of several values, or computed "
                    "when the model runs; popsim takes one degree per op (a number or a 0-d "
                    "tensor written in the model)");
  }
  if (!(std::fabs(*degree) < 2147483648.0)) {
    ctx.unsupported(function + " of degree " + std::to_string(*degree) +
                    "; the degree must be a finite integer below 2^31");
  }
  ir::Value* y = emitPointwise(ctx, floatOperand(ctx, 0), function.c_str(),
                               {static_cast<double>(static_cast<int64_t>(*degree))});
  ctx.setOutput(0, ctx.emit(ir::OpKind::StopGradient, {y}));
}

// frexp(self): the mantissa (in self's float dtype, with the gradient 1 / 2^e)
// and the exponent (int32) with x = m 2^e and 0.5 <= |m| < 1; 0 and 0 for a
// zero, the infinities and NaN with exponent 0. Eager refused integer tensors
// while tracing.
void lowerFrexp(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ctx.setOutput(0, emitPointwise(ctx, x, "frexp_mantissa"));
  ctx.setOutput(1, castTo(ctx, emitPointwise(ctx, x, "frexp_exponent"), ir::DType::Int32));
}

// mvlgamma(x, p), the multivariate log-gamma, as PyTorch sums it: lgamma of
// x plus each of -(p - 1) / 2, ..., -1/2, 0, summed, plus p (p - 1) / 4 log(pi).
// Every element must be greater than (p - 1) / 2, which the program checks at
// run time as eager does (an ExecutionError naming the element).
void lowerMvlgamma(LoweringContext& ctx) {
  ir::Value* x = floatOperand(ctx, 0);
  const int64_t p = ctx.toInt(1);
  if (p < 1) {
    ctx.unsupported("mvlgamma with p=" + std::to_string(p) + " (p must be at least 1)");
  }
  const double bound = 0.5 * static_cast<double>(p - 1);
  std::ostringstream what;
  what << "mvlgamma: every element must be greater than (p - 1) / 2 = " << bound << " (p = " << p
       << ")";
  // x > bound, for float values: x at least the next float above it (NaN fails).
  x = ctx.emit(ir::OpKind::CheckRange, {x},
               {{"min", static_cast<double>(std::nextafter(static_cast<float>(bound),
                                                           static_cast<float>(kInfinity)))},
                {"max", kInfinity},
                {"what", what.str()}});
  std::vector<float> offsets;
  for (int64_t k = 0; k < p; ++k)
    offsets.push_back(static_cast<float>(0.5 * k - bound));
  ir::Shape column = x->type().shape;
  column.push_back(1);
  ir::Value* arguments =
      ctx.emit(ir::OpKind::Add, {reshape(ctx, x, column),
                                 castTo(ctx, floatConstant(ctx, offsets), x->type().dtype)});
  ir::Value* sum =
      ctx.emit(ir::OpKind::ReduceSum, {emitPointwise(ctx, arguments, "lgamma")},
               {{"dims", std::vector<int64_t>{static_cast<int64_t>(column.size()) - 1}},
                {"keepdim", false}});
  const double constant = static_cast<double>(p * (p - 1)) * std::log(M_PI) * 0.25;
  ctx.setOutput(0, inPlaceResult(ctx, affine(ctx, sum, 1.0, constant)));
}

// polygamma(n, x), torch.special.polygamma and x.polygamma_(n): digamma for
// n = 0, the polygamma function of order n above (integers promoted to
// float32, as in PyTorch). The derivative of order n is order n + 1, hence
// the limit one below the formula's.
void lowerPolygamma(LoweringContext& ctx) {
  const std::optional<size_t> self = ctx.argumentIndex("self");
  const std::optional<size_t> order = ctx.argumentIndex("n");
  POPSIM_ASSERT(self.has_value() && order.has_value(), ctx.opName(), " without self or n.");
  const int64_t n = ctx.toInt(*order);
  if (n < 0 || n >= ir::formulas::kPolygammaMaxOrder) {
    ctx.unsupported("polygamma of order n = " + std::to_string(n) +
                    " (popsim computes orders 0 to " +
                    std::to_string(ir::formulas::kPolygammaMaxOrder - 1) + ")");
  }
  ir::Value* x = floatOperand(ctx, *self);
  ir::Value* y = n == 0 ? emitPointwise(ctx, x, "digamma")
                        : emitPointwise(ctx, x, "polygamma", {static_cast<double>(n)});
  ctx.setOutput(0, inPlaceResult(ctx, y));
}

} // namespace

void registerPointwise(LoweringRegistry& registry) {
  for (const AtenPointwise& op : atenPointwiseOps()) {
    registry.add(op.op, lowerTableOp);
    // torch.special's functions and angle have no in-place forms.
    if (std::string_view(op.op).rfind("aten::special_", 0) != 0 &&
        std::string_view(op.op) != "aten::angle") {
      registry.add(std::string(op.op) + "_", lowerTableOp);
    }
  }
  registry.add("aten::pow", lowerPow);
  for (const char* op : {"aten::deg2rad", "aten::deg2rad_", "aten::rad2deg", "aten::rad2deg_"})
    registry.add(op, lowerAngleUnits);
  registry.add("aten::pow_", lowerPow);
  for (const char* op : {"aten::special_modified_bessel_i0", "aten::special_modified_bessel_i1"})
    registry.add(op, lowerModifiedBessel);
  for (const char* op : {"aten::float_power", "aten::float_power_"})
    registry.add(op, lowerFloatPower);
  for (const char* op : {"aten::mvlgamma", "aten::mvlgamma_", "aten::special_multigammaln"})
    registry.add(op, lowerMvlgamma);
  for (const char* op : {"aten::polygamma", "aten::polygamma_", "aten::special_polygamma"})
    registry.add(op, lowerPolygamma);
  registry.add("aten::frexp", lowerFrexp);
  for (const char* function :
       {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
        "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
        "spherical_bessel_j0", "airy_ai"})
    registry.add(std::string("aten::special_") + function, lowerBesselWithoutDerivative);
  for (const char* kind :
       {"chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p"})
    registry.add(std::string("aten::special_") + kind, lowerOrthogonalPolynomial);
}

} // namespace popsim::frontend::lowerings
