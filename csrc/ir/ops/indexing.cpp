#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

#include <cmath>

// Ops that move elements by an index tensor along one dimension: whole
// slices (index_select, index_add) or single elements (gather, scatter).
// Indices are int64 in [0, size); the kernels check them at run time.
namespace popsim::ir::ops {
namespace {

void checkDim(const TensorType& x, int64_t dim, const char* op) {
  POPSIM_CHECK(dim >= 0 && dim < x.rank(), ErrorKind::Compilation, op, ": dim ", dim,
               " is outside the rank ", x.rank(), " of ", x.str(), ".");
}

void checkIndex(const TensorType& index) { requireDType(index, DType::Int64, "index"); }

Shape withDim(Shape shape, int64_t dim, int64_t size) {
  shape[static_cast<size_t>(dim)] = size;
  return shape;
}

// index_select(X, I [K]) {dim} -> X with dim of size K: slice I[k] of X at k.
std::vector<TensorType> inferIndexSelect(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  const int64_t dim = attrs.getInt("dim");
  checkDim(inputs[0], dim, "index_select");
  checkIndex(inputs[1]);
  requireRank(inputs[1], 1, "index");
  return {{inputs[0].dtype, withDim(inputs[0].shape, dim, inputs[1].shape[0])}};
}

// index_add(X, I [K], S) {dim, accumulate} -> X with slice k of S added into
// (accumulate) or written over (the last write wins) slice I[k] of X.
std::vector<TensorType> inferIndexAdd(const std::vector<TensorType>& inputs,
                                      const Attributes& attrs) {
  const int64_t dim = attrs.getInt("dim");
  checkDim(inputs[0], dim, "index_add");
  checkIndex(inputs[1]);
  requireRank(inputs[1], 1, "index");
  requireDType(inputs[2], inputs[0].dtype, "source");
  requireShape(inputs[2], withDim(inputs[0].shape, dim, inputs[1].shape[0]), "source");
  return {inputs[0]};
}

// I has X's rank and no dimension larger than X's except along dim.
void checkElementIndex(const TensorType& x, const TensorType& index, int64_t dim, const char* op) {
  checkDim(x, dim, op);
  checkIndex(index);
  requireRank(index, x.rank(), "index");
  for (int64_t d = 0; d < x.rank(); ++d) {
    POPSIM_CHECK(d == dim || index.shape[static_cast<size_t>(d)] <= x.shape[static_cast<size_t>(d)],
                 ErrorKind::Compilation, op, ": index ", index.str(), " is larger than ", x.str(),
                 " in dimension ", d, ".");
  }
}

// gather(X, I) {dim} -> I's shape: X at I's position with dim replaced by I's value.
std::vector<TensorType> inferGather(const std::vector<TensorType>& inputs,
                                    const Attributes& attrs) {
  checkElementIndex(inputs[0], inputs[1], attrs.getInt("dim"), "gather");
  return {{inputs[0].dtype, inputs[1].shape}};
}

// scatter(X, I, S) {dim, reduce} -> X with S[p] written over ("none", the
// last write wins) or added into ("sum") X at p with dim replaced by I[p],
// for every position p of I (S has I's shape).
std::vector<TensorType> inferScatter(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  checkElementIndex(inputs[0], inputs[1], attrs.getInt("dim"), "scatter");
  requireDType(inputs[2], inputs[0].dtype, "src");
  requireShape(inputs[2], inputs[1].shape, "src");
  const std::string& reduce = attrs.getString("reduce");
  POPSIM_CHECK(reduce == "none" || reduce == "sum", ErrorKind::Compilation,
               "scatter reduce must be \"none\" or \"sum\", got \"", reduce, "\".");
  POPSIM_CHECK(reduce == "none" || isFloat(inputs[0].dtype) || inputs[0].dtype == DType::Int64,
               ErrorKind::Compilation, "scatter sums float or int64 tensors, got ", inputs[0].str(),
               ".");
  return {inputs[0]};
}

// scatter_reduce(X, I, S) {dim, reduce, include_self} -> X with the S[p]
// of each target reduced into it ("sum", "prod", "mean", "amax", "amin"),
// starting from X's value (include_self) or from the first S[p] (targets no
// S[p] reaches keep X's value), float32.
std::vector<TensorType> inferScatterReduce(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  checkElementIndex(inputs[0], inputs[1], attrs.getInt("dim"), "scatter_reduce");
  requireFloat(inputs[0], "input");
  requireFloat(inputs[2], "src");
  requireShape(inputs[2], inputs[1].shape, "src");
  const std::string& reduce = attrs.getString("reduce");
  POPSIM_CHECK(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" ||
                   reduce == "amin",
               ErrorKind::Compilation,
               "scatter_reduce reduce must be sum, prod, mean, amax or amin, got \"", reduce,
               "\".");
  return {inputs[0]};
}

// index_select: each slice's gradient added back where it came from
// (repeated indices sum, as in PyTorch).
Grads indexSelectGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = b.emit(OpKind::IndexAdd, {b.zeros(in(b, 0)->type().shape), in(b, 1), g[0]},
                     {{"dim", nodeOf(b).attrs().getInt("dim")}, {"accumulate", true}});
  return result;
}

// index_add / index_copy: the input's gradient passes (but not into the
// overwritten slices of a copy); the source's is the slices it went to.
Grads indexAddGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const int64_t dim = nodeOf(b).attrs().getInt("dim");
  const bool accumulate = nodeOf(b).attrs().getBool("accumulate");
  if (needed[0]) {
    result[0] = accumulate
                    ? g[0]
                    : b.emit(OpKind::IndexAdd, {g[0], in(b, 1), b.zeros(in(b, 2)->type().shape)},
                             {{"dim", dim}, {"accumulate", false}});
  }
  if (needed[2]) result[2] = b.emit(OpKind::IndexSelect, {g[0], in(b, 1)}, {{"dim", dim}});
  return result;
}

// gather: the gradient added back into the positions read (repeats sum).
Grads gatherGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = b.emit(OpKind::Scatter, {b.zeros(in(b, 0)->type().shape), in(b, 1), g[0]},
                     {{"dim", nodeOf(b).attrs().getInt("dim")}, {"reduce", std::string("sum")}});
  return result;
}

// scatter: the input's gradient passes (not into overwritten positions when
// writing over); src's is read back from the positions it went to.
Grads scatterGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const int64_t dim = nodeOf(b).attrs().getInt("dim");
  const bool sum = nodeOf(b).attrs().getString("reduce") == "sum";
  if (needed[0]) {
    result[0] = sum ? g[0]
                    : b.emit(OpKind::Scatter, {g[0], in(b, 1), b.zeros(in(b, 2)->type().shape)},
                             {{"dim", dim}, {"reduce", std::string("none")}});
  }
  if (needed[2]) result[2] = b.emit(OpKind::Gather, {g[0], in(b, 1)}, {{"dim", dim}});
  return result;
}

// scatter_reduce: PyTorch's formulas for sum, mean (each value's share of
// its target's count), prod and amax/amin (split evenly between the values equal
// to the result, the input's counted even without include_self, as PyTorch
// counts them); without include_self the input gets none at reached targets.
Grads scatterReduceGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  const Attributes& attrs = nodeOf(b).attrs();
  const std::string& reduce = attrs.getString("reduce");
  const int64_t dim = attrs.getInt("dim");
  const bool includeSelf = attrs.getBool("include_self");
  Value* x = in(b, 0);
  Value* index = in(b, 1);
  Value* src = in(b, 2);
  const auto scatterSum = [&](Value* base, Value* values) {
    return b.emit(OpKind::ScatterReduce, {base, index, values},
                  {{"dim", dim}, {"reduce", std::string("sum")}, {"include_self", true}});
  };
  const auto gatherAt = [&](Value* v) {
    return b.emit(OpKind::Gather, {v, index}, {{"dim", dim}});
  };
  const auto ones = [&](const ir::Shape& shape) { return b.affine(b.zeros(shape), 1.0, 1.0); };
  Value* gradSelf = g[0];
  Value* gradSrc = nullptr;
  if (reduce == "sum") {
    gradSrc = gatherAt(g[0]);
  } else if (reduce == "mean") {
    Value* counts = scatterSum(includeSelf ? ones(x->type().shape) : b.zeros(x->type().shape),
                               ones(src->type().shape));
    Value* shares =
        b.emit(OpKind::Div, {g[0], b.emit(OpKind::Pointwise, {counts},
                                          {{"function", std::string("clamp")},
                                           {"params", std::vector<double>{1.0, INFINITY}}})});
    gradSelf = shares;
    gradSrc = gatherAt(shares);
  } else if (reduce == "prod") {
    // PyTorch's formulas, exact where values are zero: the gradient of a
    // zero factor is the product of the others, taken with it set to one.
    Value* zero = b.zeros({});
    Value* one = b.affine(zero, 1.0, 1.0);
    const auto isZero = [&](Value* v) {
      return b.emit(OpKind::BinaryPointwise, {v, zero}, {{"function", std::string("eq")}});
    };
    const auto oneWhere = [&](Value* mask, Value* v) {
      return b.emit(OpKind::Where, {mask, one, v});
    };
    const auto product = [&](Value* base, Value* values) {
      return b.emit(OpKind::ScatterReduce, {base, index, values},
                    {{"dim", dim}, {"reduce", std::string("prod")}, {"include_self", includeSelf}});
    };
    Value* maskedSelf = oneWhere(isZero(x), x);
    gradSelf =
        b.emit(OpKind::Div, {b.emit(OpKind::Mul, {g[0], product(maskedSelf, src)}), maskedSelf});
    Value* srcZero = isZero(src);
    Value* zerosAtTarget = gatherAt(scatterSum(
        b.zeros(x->type().shape),
        b.emit(OpKind::Cast, {srcZero}, {{"dtype", std::string(ir::dtypeName(x->type().dtype))}})));
    Value* singleZero = b.emit(OpKind::BinaryPointwise,
                               {srcZero, b.emit(OpKind::BinaryPointwise, {zerosAtTarget, one},
                                                {{"function", std::string("eq")}})},
                               {{"function", std::string("logical_and")}});
    Value* othersProduct =
        gatherAt(b.emit(OpKind::Mul, {g[0], product(x, oneWhere(singleZero, src))}));
    Value* quotient = b.emit(
        OpKind::Div, {gatherAt(b.emit(OpKind::Mul, {g[0], out(b)})), oneWhere(srcZero, src)});
    gradSrc = b.emit(OpKind::Where, {singleZero, othersProduct, quotient});
  } else { // amax, amin
    Value* result = out(b);
    const auto equal = [&](Value* a, Value* c) {
      return b.emit(OpKind::Cast,
                    {b.emit(OpKind::BinaryPointwise, {a, c}, {{"function", std::string("eq")}})},
                    {{"dtype", std::string(ir::dtypeName(x->type().dtype))}});
    };
    Value* selfIsResult = equal(x, result);
    Value* srcIsResult = equal(src, gatherAt(result));
    Value* shares = b.emit(OpKind::Div, {g[0], scatterSum(selfIsResult, srcIsResult)});
    gradSelf = b.emit(OpKind::Mul, {selfIsResult, shares});
    gradSrc = b.emit(OpKind::Mul, {srcIsResult, gatherAt(shares)});
  }
  if (!includeSelf && needed[0]) {
    gradSelf = b.emit(OpKind::Scatter, {gradSelf, index, b.zeros(src->type().shape)},
                      {{"dim", dim}, {"reduce", std::string("none")}});
  }
  Grads result = none(b);
  if (needed[0]) result[0] = gradSelf;
  if (needed[2]) result[2] = gradSrc;
  return result;
}

} // namespace

void registerIndexingOps(OpRegistry& registry) {
  registry.add(
      OpKind::ScatterReduce, 3, 3, {"input", "index", "src"},
      {{"dim", AttrType::Int}, {"reduce", AttrType::String}, {"include_self", AttrType::Bool}},
      inferScatterReduce);
  registry.add(OpKind::IndexSelect, 2, 2, {"input", "index"}, {{"dim", AttrType::Int}},
               inferIndexSelect);
  registry.add(OpKind::IndexAdd, 3, 3, {"input", "index", "source"},
               {{"dim", AttrType::Int}, {"accumulate", AttrType::Bool}}, inferIndexAdd);
  registry.add(OpKind::Gather, 2, 2, {"input", "index"}, {{"dim", AttrType::Int}}, inferGather);
  registry.add(OpKind::Scatter, 3, 3, {"input", "index", "src"},
               {{"dim", AttrType::Int}, {"reduce", AttrType::String}}, inferScatter);
  registry.setGradient(OpKind::IndexSelect, indexSelectGradient);
  registry.setGradient(OpKind::IndexAdd, indexAddGradient);
  registry.setGradient(OpKind::Gather, gatherGradient);
  registry.setGradient(OpKind::Scatter, scatterGradient);
  registry.setGradient(OpKind::ScatterReduce, scatterReduceGradient);
  registry.setWork(OpKind::IndexSelect, work::movement);
  registry.setWork(OpKind::IndexAdd, work::movement);
  registry.setWork(OpKind::Gather, work::movement);
  registry.setWork(OpKind::Scatter, work::movement);
  registry.setWork(OpKind::ScatterReduce, work::movement);
}

} // namespace popsim::ir::ops
