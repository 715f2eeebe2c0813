#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// batch_norm(input[N,C,...], running_mean[C], running_var[C], weight[C], bias[C])
// in inference form: normalises with the running statistics.
std::vector<TensorType> inferBatchNorm(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireFloat(x, "input 0 (input)");
  POPSIM_CHECK(x.rank() >= 2 && x.rank() <= 5, ErrorKind::Compilation,
               "input 0 (input) must have 2 to 5 dimensions, got ", x.str(), ".");
  const Shape channels = {x.shape[1]};
  const OpSchema& schema = opSchema(OpKind::BatchNorm);
  for (size_t i = 1; i < inputs.size(); ++i) {
    requireFloat(inputs[i], schema.inputName(i));
    requireShape(inputs[i], channels, schema.inputName(i));
  }
  POPSIM_CHECK(attrs.getFloat("eps") >= 0, ErrorKind::Compilation, "eps must be >= 0.");
  return {x};
}

// layer_norm(input[..., D...], weight[D...], bias[D...]) over the last
// `normalized_ndim` dimensions.
std::vector<TensorType> inferLayerNorm(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireFloat(x, "input 0 (input)");
  const int64_t ndim = attrs.getInt("normalized_ndim");
  POPSIM_CHECK(ndim >= 1 && ndim <= x.rank(), ErrorKind::Compilation, "normalized_ndim ", ndim,
               " must be between 1 and the input rank ", x.rank(), ".");
  const Shape normalized(x.shape.end() - ndim, x.shape.end());
  const OpSchema& schema = opSchema(OpKind::LayerNorm);
  for (size_t i = 1; i < inputs.size(); ++i) {
    requireFloat(inputs[i], schema.inputName(i));
    requireShape(inputs[i], normalized, schema.inputName(i));
  }
  POPSIM_CHECK(attrs.getFloat("eps") >= 0, ErrorKind::Compilation, "eps must be >= 0.");
  return {x};
}

} // namespace

void registerNormalizationOps(OpRegistry& registry) {
  registry.add(OpKind::BatchNorm, 5, 5, {"input", "running_mean", "running_var", "weight", "bias"},
               {{"eps", AttrType::Float}}, inferBatchNorm);
  registry.add(OpKind::LayerNorm, 3, 3, {"input", "weight", "bias"},
               {{"normalized_ndim", AttrType::Int}, {"eps", AttrType::Float}}, inferLayerNorm);
}

} // namespace popsim::ir::ops
