#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

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
}

} // namespace popsim::ir::ops
