#include "ir/ops/gradient_helpers.h"
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

// embedding_grad(dY[..., D], indices[...]) -> dW[num_embeddings, D].
std::vector<TensorType> inferEmbeddingGrad(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (grad_output)");
  POPSIM_CHECK(inputs[1].dtype == DType::Int64 || inputs[1].dtype == DType::Int32,
               ErrorKind::Compilation, "input 1 (indices) must be i64 or i32, got ",
               inputs[1].str(), ".");
  POPSIM_CHECK(inputs[0].rank() == inputs[1].rank() + 1, ErrorKind::Compilation, "grad_output ",
               inputs[0].str(), " does not match indices ", inputs[1].str(), ".");
  return {typed(inputs[0], {attrs.getInt("num_embeddings"), inputs[0].shape.back()})};
}

Grads embeddingGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  if (needed[0]) {
    result[0] = b.emit(OpKind::EmbeddingGrad, {g[0], in(b, 1)},
                       {{"num_embeddings", in(b, 0)->type().shape[0]},
                        {"padding_idx", nodeOf(b).attrs().getInt("padding_idx")}});
  }
  return result;
}

} // namespace

void registerEmbeddingOps(OpRegistry& registry) {
  registry.add(OpKind::Embedding, 2, 2, {"weight", "indices"}, {{"padding_idx", AttrType::Int}},
               inferEmbedding);
  registry.add(OpKind::EmbeddingGrad, 2, 2, {"grad_output", "indices"},
               {{"num_embeddings", AttrType::Int}, {"padding_idx", AttrType::Int}},
               inferEmbeddingGrad);
  registry.setGradient(OpKind::Embedding, embeddingGradient);
  registry.setWork(OpKind::Embedding, work::movement);
  registry.setWork(OpKind::EmbeddingGrad, work::movement);
}

} // namespace popsim::ir::ops
