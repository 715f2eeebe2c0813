#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// embedding(weight[V,D], indices[...] of i32/i64) -> [..., D]. padding_idx
// (-1 for none) only matters for the gradient.
std::vector<TensorType> inferEmbedding(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const TensorType& weight = inputs[0];
  const TensorType& indices = inputs[1];
  requireRank(weight, 2, "input 0 (weight)");
  requireFloat(weight, "input 0 (weight)");
  POPSIM_CHECK(indices.dtype == DType::Int64 || indices.dtype == DType::Int32,
               ErrorKind::Compilation, "input 1 (indices) must be i64 or i32, got ", indices.str(),
               ".");
  const int64_t padding = attrs.getInt("padding_idx");
  POPSIM_CHECK(padding >= -1 && padding < weight.shape[0], ErrorKind::Compilation, "padding_idx ",
               padding, " is out of range for ", weight.shape[0], " embeddings.");
  Shape out = indices.shape;
  out.push_back(weight.shape[1]);
  return {{weight.dtype, out}};
}

} // namespace

void registerEmbeddingOps(OpRegistry& registry) {
  registry.add(OpKind::Embedding, 2, 2, {"weight", "indices"}, {{"padding_idx", AttrType::Int}},
               inferEmbedding);
}

} // namespace popsim::ir::ops
