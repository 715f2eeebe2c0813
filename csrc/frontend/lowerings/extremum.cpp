// Reductions built on the extremum ops and the sums: amax, amin, max and min
// (over everything or along a dimension, with indices), argmax, argmin,
// median, nanmedian and mode, logsumexp, var, std, all and any; and their running
// forms along a dimension, cummax, cummin and logcumsumexp.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace popsim::frontend::lowerings {
namespace {

// The reduced dimensions, sorted and unique; every dimension when `dims` is empty.
std::vector<int64_t> reducedDims(const LoweringContext& ctx, const std::vector<int64_t>& dims,
                                 int64_t rank) {
  std::vector<int64_t> result;
  for (int64_t dim : dims)
    result.push_back(normalizedDim(ctx, dim, rank));
  if (result.empty()) {
    result.resize(static_cast<size_t>(rank));
    std::iota(result.begin(), result.end(), 0);
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

// The dims argument at `index` (an int, a list, or None for all).
std::vector<int64_t> dimsArgument(LoweringContext& ctx, std::optional<size_t> index, int64_t rank) {
  if (!index.has_value() || ctx.isNone(*index)) return reducedDims(ctx, {}, rank);
  return reducedDims(ctx, ctx.toIntList(*index), rank);
}

// x's shape with the reduced dims as 1 (keepdim) or dropped.
ir::Shape reducedShape(const ir::Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  ir::Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    if (!reduced) out.push_back(shape[d]);
    if (reduced && keepdim) out.push_back(1);
  }
  return out;
}

// An extremum op over several dims: the reduced dims are moved last and
// flattened into one, which the op reduces (so ties are shared over all of
// them at once, as PyTorch shares them).
ir::Value* overDims(LoweringContext& ctx, ir::OpKind kind, ir::Value* x,
                    const std::vector<int64_t>& dims, bool keepdim, ir::Attributes attrs) {
  const ir::Shape& shape = x->type().shape;
  if (shape.empty()) {
    x = reshape(ctx, x, {1});
  } else {
    std::vector<int64_t> perm;
    ir::Shape flat;
    int64_t reducedSize = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
        perm.push_back(d);
        flat.push_back(shape[static_cast<size_t>(d)]);
      }
    }
    for (int64_t d : dims) {
      perm.push_back(d);
      reducedSize *= shape[static_cast<size_t>(d)];
    }
    flat.push_back(reducedSize);
    if (!std::is_sorted(perm.begin(), perm.end())) x = permute(ctx, x, perm);
    x = reshape(ctx, x, flat);
  }
  attrs.set("dim", x->type().rank() - 1);
  ir::Value* y = ctx.emit(kind, {x}, std::move(attrs));
  return reshape(ctx, y, reducedShape(shape, dims, keepdim));
}

// The order statistic `function` ("max", "min", "median", "nanmedian") of x
// over sorted dims, with the gradient rule `ties` (ir/ops/extremum.cpp).
ir::Value* orderStatistic(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& dims,
                          bool keepdim, const char* function, const char* ties) {
  return overDims(ctx, ir::OpKind::ReduceExtremum, x, dims, keepdim,
                  {{"function", std::string(function)}, {"ties", std::string(ties)}});
}

ir::Value* positionOf(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& dims,
                      bool keepdim, const char* function) {
  return overDims(ctx, ir::OpKind::ArgExtremum, x, dims, keepdim,
                  {{"function", std::string(function)}});
}

ir::Value* argExtremum(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& dims,
                       bool keepdim, bool max) {
  return positionOf(ctx, x, dims, keepdim, max ? "max" : "min");
}

// The tensor argument at `index` as the order statistics take it: float,
// int32 and int64 as they are (PyTorch orders integers too, as in CLIP's
// `text.argmax(dim=-1)` of token ids), bool as int32.
ir::Value* orderedTensor(LoweringContext& ctx, size_t index) {
  ir::Value* x = ctx.tensor(index);
  return x->type().dtype == ir::DType::Bool ? castTo(ctx, x, ir::DType::Int32) : x;
}

// A statistic's values in the dtype of the op's tensor argument 0 (a bool
// tensor's maximum is a bool).
ir::Value* inArgumentDType(LoweringContext& ctx, ir::Value* values) {
  const ir::DType dtype = ctx.tensor(0)->type().dtype;
  return values->type().dtype == dtype ? values : castTo(ctx, values, dtype);
}

// amax / amin(self, dim=[], keepdim=False): ties share the gradient.
template <bool Max> void lowerAmax(LoweringContext& ctx) {
  ir::Value* x = orderedTensor(ctx, 0);
  const auto dims = dimsArgument(ctx, ctx.argumentIndex("dim"), x->type().rank());
  ctx.setOutput(0, inArgumentDType(ctx, reduceExtremum(ctx, x, dims, boolArgument(ctx, "keepdim"),
                                                       Max, "split")));
}

// aminmax(self, *, dim=None, keepdim=False): amin and amax together, over
// everything or along dim (ties share the gradient, as amin's and amax's).
void lowerAminmax(LoweringContext& ctx) {
  ir::Value* x = orderedTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  const std::vector<int64_t> dims =
      dimIndex.has_value() && !ctx.isNone(*dimIndex) && rank > 0
          ? std::vector<int64_t>{normalizedDim(ctx, ctx.toInt(*dimIndex), rank)}
          : reducedDims(ctx, {}, rank);
  const bool keepdim = boolArgument(ctx, "keepdim");
  ctx.setOutput(0, inArgumentDType(ctx, reduceExtremum(ctx, x, dims, keepdim, false, "split")));
  ctx.setOutput(1, inArgumentDType(ctx, reduceExtremum(ctx, x, dims, keepdim, true, "split")));
}

// max / min: of two tensors (maximum, minimum); over everything (ties share
// the gradient, a NaN result goes to the NaNs); along a dimension, values and indices (the first
// extremum takes the gradient, as it is the one the index names).
template <bool Max> void lowerMaxOrMin(LoweringContext& ctx) {
  if (ctx.numInputs() == 2 && ctx.isTensor(1)) {
    ctx.setOutput(0, emitBinaryFunction(ctx, Max ? "maximum" : "minimum", 0, 1));
    return;
  }
  ir::Value* x = orderedTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  if (ctx.numInputs() == 1) {
    ctx.setOutput(0, inArgumentDType(ctx, reduceExtremum(ctx, x, reducedDims(ctx, {}, rank), false,
                                                         Max, "split_nan")));
    return;
  }
  const std::vector<int64_t> dims = {normalizedDim(ctx, ctx.toInt(1), rank)};
  const bool keepdim = ctx.numInputs() > 2 && ctx.toBool(2);
  ctx.setOutput(
      0, inArgumentDType(ctx, reduceExtremum(ctx, x, rank == 0 ? std::vector<int64_t>{} : dims,
                                             keepdim, Max, "first")));
  ctx.setOutput(1, argExtremum(ctx, x, rank == 0 ? std::vector<int64_t>{} : dims, keepdim, Max));
}

// argmax / argmin(self, dim=None, keepdim=False): None flattens the tensor.
template <bool Max> void lowerArgExtremum(LoweringContext& ctx) {
  ir::Value* x = orderedTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const bool keepdim = boolArgument(ctx, "keepdim");
  if (ctx.isNone(1) || rank == 0) {
    ir::Value* flat = reshape(ctx, x, {x->type().numel()});
    ir::Value* index = argExtremum(ctx, flat, {0}, false, Max);
    ctx.setOutput(0,
                  keepdim ? reshape(ctx, index, ir::Shape(static_cast<size_t>(rank), 1)) : index);
    return;
  }
  ctx.setOutput(0, argExtremum(ctx, x, {normalizedDim(ctx, ctx.toInt(1), rank)}, keepdim, Max));
}

// median / nanmedian(self): over everything, the lower of the two middle
// values (NaN if there is one; nanmedian skips them), its gradient shared
// between the elements equal to it; (self, dim, keepdim=False): values and
// indices along a dimension, the gradient going to the index.
template <bool IgnoreNaN> void lowerMedian(LoweringContext& ctx) {
  const char* function = IgnoreNaN ? "nanmedian" : "median";
  ir::Value* x = orderedTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  if (ctx.numInputs() == 1) {
    ctx.setOutput(0, inArgumentDType(ctx, orderStatistic(ctx, x, reducedDims(ctx, {}, rank), false,
                                                         function, "split_nan")));
    return;
  }
  const std::vector<int64_t> dims =
      rank == 0 ? std::vector<int64_t>{}
                : std::vector<int64_t>{normalizedDim(ctx, ctx.toInt(1), rank)};
  const bool keepdim = ctx.numInputs() > 2 && ctx.toBool(2);
  ctx.setOutput(0, inArgumentDType(ctx, orderStatistic(ctx, x, dims, keepdim, function, "first")));
  ctx.setOutput(1, positionOf(ctx, x, dims, keepdim, function));
}

// mode(self, dim=-1, keepdim=False): along dim, the value that occurs most
// often (the smallest of equally frequent ones) and the index of its last
// occurrence, as PyTorch's CPU kernel finds them: it sorts each row and keeps
// the last element of the first longest run (its sort keeps equal values in
// order in rows of up to 16; longer ones may name another occurrence). The
// counts compare every pair of a row's elements. NaN equals nothing, so it is
// the mode only of a row of NaNs (PyTorch's sort leaves rows with NaN in no
// defined order). The gradient goes to the index, as eager's.
void lowerMode(LoweringContext& ctx) {
  ir::Value* x = orderedTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const bool keepdim = ctx.numInputs() > 2 && ctx.toBool(2);
  if (rank == 0) {
    ctx.setOutput(0, inArgumentDType(ctx, x));
    ctx.setOutput(1, constantFilled(ctx, {ir::DType::Int64, {}}, 0.0));
    return;
  }
  const int64_t dim = normalizedDim(ctx, ctx.numInputs() > 1 ? ctx.toInt(1) : -1, rank);
  const int64_t last = rank - 1;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  if (!std::is_sorted(perm.begin(), perm.end())) x = permute(ctx, x, perm);
  const ir::Shape rows = x->type().shape; // [..., n]
  const int64_t n = rows.back();
  ir::Shape column = rows, row = rows;
  column.push_back(1);
  row.insert(row.end() - 1, 1);
  ir::Value* plain = ctx.emit(ir::OpKind::StopGradient, {x}, {});
  ir::Value* pairs = emitBinary(ctx, "eq", reshape(ctx, plain, column), reshape(ctx, plain, row));
  ir::Value* counts = ctx.emit(ir::OpKind::ReduceSum, {castTo(ctx, pairs, ir::DType::Float32)},
                               {{"dims", std::vector<int64_t>{rank}}, {"keepdim", false}});
  ir::Value* most = reduceExtremum(ctx, counts, {last}, true, true, "split");
  // Above every candidate: +inf, or an integer row's largest value.
  ir::Value* above =
      ir::isFloat(plain->type().dtype)
          ? constantFilled(ctx, {plain->type().dtype, {}}, std::numeric_limits<double>::infinity())
          : reduceExtremum(ctx, plain, {last}, true, true, "split");
  ir::Value* smallest = reduceExtremum(
      ctx, ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "eq", counts, most), plain, above}), {last},
      true, false, "split");
  ir::Value* isMode = emitBinary(ctx, "eq", plain, smallest);
  if (ir::isFloat(plain->type().dtype)) { // a row of NaNs: its last NaN
    isMode = emitBinary(ctx, "logical_or", isMode,
                        emitBinary(ctx, "logical_and", emitBinary(ctx, "ne", plain, plain),
                                   emitBinary(ctx, "ne", smallest, smallest)));
  }
  std::vector<int64_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  ir::Value* index = reduceExtremum(
      ctx,
      ctx.emit(ir::OpKind::Where, {isMode, int64Constant(ctx, positions),
                                   constantFilled(ctx, {ir::DType::Int64, {}}, -1.0)}),
      {last}, true, true, "split");
  ir::Value* values = ctx.emit(ir::OpKind::Gather, {x, index}, {{"dim", last}});
  ir::Shape out = rows;
  out.pop_back();
  if (keepdim) out.insert(out.begin() + dim, 1);
  ctx.setOutput(0, inArgumentDType(ctx, reshape(ctx, values, out)));
  ctx.setOutput(1, reshape(ctx, index, out));
}

// logsumexp(self, dim, keepdim) as PyTorch computes it: m + log(sum(exp(x - m)))
// with m the amax, 0 where it is infinite, through which no gradient flows
// (the gradient is exp(x - result), PyTorch's formula).
void lowerLogsumexp(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const auto dims = dimsArgument(ctx, ctx.argumentIndex("dim"), rank);
  const bool keepdim = boolArgument(ctx, "keepdim");
  ir::Value* maxes = reduceExtremum(ctx, x, dims, true, true, "split");
  ir::Value* finite = emitBinary(ctx, "lt", ctx.emit(ir::OpKind::Abs, {maxes}),
                                 floatScalar(ctx, std::numeric_limits<double>::infinity()));
  ir::Value* offset =
      ctx.emit(ir::OpKind::StopGradient,
               {ctx.emit(ir::OpKind::Where, {finite, maxes, floatScalar(ctx, 0.0)})}, {});
  ir::Value* shifted = ctx.emit(ir::OpKind::Exp, {ctx.emit(ir::OpKind::Sub, {x, offset})});
  ir::Value* sum = rank == 0 ? shifted
                             : ctx.emit(ir::OpKind::ReduceSum, {shifted},
                                        {{"dims", dims}, {"keepdim", keepdim}});
  offset = reshape(ctx, offset, reducedShape(x->type().shape, dims, keepdim));
  ctx.setOutput(0, ctx.emit(ir::OpKind::Add, {ctx.emit(ir::OpKind::Log, {sum}), offset}));
}

// The variance (or standard deviation: the mean of squared deviations over
// N - correction) and, for var_mean / std_mean, the mean, over the op's dims.
template <bool Std> std::vector<ir::Value*> varianceAndMean(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t rank = x->type().rank();
  const std::optional<size_t> dimIndex = ctx.argumentIndex("dim");
  const auto dims = dimsArgument(ctx, dimIndex, rank);
  const bool keepdim = boolArgument(ctx, "keepdim");
  double correction = 1.0;
  if (const auto index = ctx.argumentIndex("correction"); index && !ctx.isNone(*index)) {
    correction = ctx.toDouble(*index);
  } else if (const auto unbiased = ctx.argumentIndex("unbiased");
             unbiased && !ctx.isNone(*unbiased)) {
    correction = ctx.toBool(*unbiased) ? 1.0 : 0.0;
  }
  if (rank == 0) x = reshape(ctx, x, {1});
  const std::vector<int64_t> reduced = rank == 0 ? std::vector<int64_t>{0} : dims;
  int64_t count = 1;
  for (int64_t d : reduced)
    count *= x->type().shape[static_cast<size_t>(d)];
  // No gradient through the mean: PyTorch's is 2 (x - mean) / (N - correction),
  // to which the mean's path adds zero up to rounding (and NaN beside infinities).
  ir::Value* mean =
      ctx.emit(ir::OpKind::StopGradient,
               {ctx.emit(ir::OpKind::ReduceMean, {x}, {{"dims", reduced}, {"keepdim", true}})}, {});
  ir::Value* deviation = ctx.emit(ir::OpKind::Sub, {x, mean});
  ir::Value* squares = ctx.emit(ir::OpKind::Mul, {deviation, deviation});
  const bool kept = keepdim && rank > 0;
  ir::Value* sum =
      ctx.emit(ir::OpKind::ReduceSum, {squares}, {{"dims", reduced}, {"keepdim", kept}});
  ir::Value* variance =
      affine(ctx, sum, 1.0 / std::max(0.0, static_cast<double>(count) - correction), 0.0);
  // The mean as an output has its own gradient path.
  ir::Value* meanOut =
      ctx.emit(ir::OpKind::ReduceMean, {x}, {{"dims", reduced}, {"keepdim", kept}});
  if (rank == 0) {
    variance = reshape(ctx, variance, {});
    meanOut = reshape(ctx, meanOut, {});
  }
  return {Std ? ctx.emit(ir::OpKind::Sqrt, {variance}) : variance, meanOut};
}

// var / std(self, ...): PyTorch's unbiased estimate by default (Bessel's
// correction 1), in every overload (self, unbiased), (self, dim, unbiased,
// keepdim) and (self, dim, correction=, keepdim).
template <bool Std> void lowerVariance(LoweringContext& ctx) {
  ctx.setOutput(0, varianceAndMean<Std>(ctx)[0]);
}

// var_mean / std_mean: the same, and the mean over the same dims.
template <bool Std> void lowerVarianceMean(LoweringContext& ctx) {
  const std::vector<ir::Value*> both = varianceAndMean<Std>(ctx);
  ctx.setOutput(0, both[0]);
  ctx.setOutput(1, both[1]);
}

// all / any(self) and (self, dim, keepdim): the min / max of x != 0.
template <bool All> void lowerAllOrAny(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const int64_t rank = x->type().rank();
  ir::Value* nonzero = emitBinary(ctx, "ne", x, constantFilled(ctx, {x->type().dtype, {}}, 0.0));
  ir::Value* flags = castTo(ctx, nonzero, ir::DType::Float32);
  const auto dims =
      ctx.numInputs() > 1 ? reducedDims(ctx, {ctx.toInt(1)}, rank) : reducedDims(ctx, {}, rank);
  ir::Value* y = reduceExtremum(ctx, flags, dims, boolArgument(ctx, "keepdim"), !All, "split");
  ctx.setOutput(0, castTo(ctx, y, ir::DType::Bool));
}

// The dimension a running op scans: dim normalised, 0 for a 0-d tensor
// (which PyTorch scans as one element along dim 0 or -1).
int64_t scannedDim(LoweringContext& ctx, ir::Value* x, size_t argument) {
  const int64_t rank = x->type().rank();
  return normalizedDim(ctx, ctx.toInt(argument), std::max<int64_t>(rank, 1));
}

// cummax / cummin(self, dim): the running extremum and the position it came
// from (a tie takes the later position; NaN, once met, stays). Bool tensors
// are ordered as int64 and given back as bool, as PyTorch returns them.
template <bool Max> void lowerCumulativeExtremum(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  const ir::DType dtype = x->type().dtype;
  const bool ordered = ir::isFloat(dtype) || dtype == ir::DType::Int32 || dtype == ir::DType::Int64;
  const std::vector<ir::Value*> outputs = ctx.emitMulti(
      ir::OpKind::CumulativeExtremum, {ordered ? x : castTo(ctx, x, ir::DType::Int64)},
      {{"function", std::string(Max ? "max" : "min")}, {"dim", scannedDim(ctx, x, 1)}});
  ctx.setOutput(0, castTo(ctx, outputs[0], dtype));
  ctx.setOutput(1, outputs[1]);
}

// logcumsumexp(self, dim): log(cumsum(exp(x))) without overflow, of floats
// (PyTorch has no integer form either).
void lowerLogcumsumexp(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (!ir::isFloat(x->type().dtype)) {
    ctx.unsupported("logcumsumexp of a " + x->type().str() +
                    " tensor: PyTorch computes it for floating-point tensors only; convert the "
                    "input with .float() first");
  }
  ctx.setOutput(0,
                ctx.emit(ir::OpKind::LogCumulativeSumExp, {x}, {{"dim", scannedDim(ctx, x, 1)}}));
}

} // namespace

ir::Value* reduceExtremum(LoweringContext& ctx, ir::Value* x, const std::vector<int64_t>& dims,
                          bool keepdim, bool max, const char* ties) {
  return orderStatistic(ctx, x, dims, keepdim, max ? "max" : "min", ties);
}

void registerExtremumReductions(LoweringRegistry& registry) {
  registry.add("aten::amax", lowerAmax<true>);
  registry.add("aten::amin", lowerAmax<false>);
  registry.add("aten::aminmax", lowerAminmax);
  registry.add("aten::max", lowerMaxOrMin<true>);
  registry.add("aten::min", lowerMaxOrMin<false>);
  registry.add("aten::argmax", lowerArgExtremum<true>);
  registry.add("aten::argmin", lowerArgExtremum<false>);
  registry.add("aten::median", lowerMedian<false>);
  registry.add("aten::nanmedian", lowerMedian<true>);
  registry.add("aten::mode", lowerMode);
  registry.add("aten::logsumexp", lowerLogsumexp);
  registry.add("aten::cummax", lowerCumulativeExtremum<true>);
  registry.add("aten::cummin", lowerCumulativeExtremum<false>);
  registry.add("aten::logcumsumexp", lowerLogcumsumexp);
  registry.add("aten::var", lowerVariance<false>);
  registry.add("aten::std", lowerVariance<true>);
  registry.add("aten::var_mean", lowerVarianceMean<false>);
  registry.add("aten::std_mean", lowerVarianceMean<true>);
  registry.add("aten::all", lowerAllOrAny<true>);
  registry.add("aten::any", lowerAllOrAny<false>);
}

} // namespace popsim::frontend::lowerings
