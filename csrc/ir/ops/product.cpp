#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// Products are computed on float (f32, f16) or int64 tensors (integer and bool
// tensors multiply as int64 in PyTorch).
void checkProductInput(const TensorType& x, const Attributes& attrs, std::string_view op) {
  POPSIM_CHECK(isFloat(x.dtype) || x.dtype == DType::Int64, ErrorKind::Compilation, op,
               " multiplies float or int64 tensors, got ", x.str(), ".");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < x.rank(), ErrorKind::Compilation, op, ": dim ", dim,
               " is outside the rank ", x.rank(), " of ", x.str(), ".");
}

TensorType reducedAlong(const TensorType& x, int64_t dim) {
  Shape shape = x.shape;
  shape[static_cast<size_t>(dim)] = 1;
  return {x.dtype, shape};
}

// reduce_product(X) {dim} -> the product along dim (kept as size 1).
std::vector<TensorType> inferReduceProduct(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  checkProductInput(inputs[0], attrs, "reduce_product");
  return {reducedAlong(inputs[0], attrs.getInt("dim"))};
}

// cumulative_product(X) {dim} -> the running products along dim.
std::vector<TensorType> inferCumulativeProduct(const std::vector<TensorType>& inputs,
                                               const Attributes& attrs) {
  checkProductInput(inputs[0], attrs, "cumulative_product");
  return {inputs[0]};
}

// reduce_product_grad / cumulative_product_grad(dY, X, Y) {dim} -> dX, as
// PyTorch computes it: dY * Y / X when X has no zero anywhere, otherwise
// from products of the other elements (so zeros get exact gradients).
std::vector<TensorType> inferProductGrad(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs, bool cumulative) {
  const TensorType& x = inputs[1];
  requireFloat(x, "input 1 (input)");
  checkProductInput(x, attrs, cumulative ? "cumulative_product_grad" : "reduce_product_grad");
  const Shape expected = cumulative ? x.shape : reducedAlong(x, attrs.getInt("dim")).shape;
  requireShape(inputs[0], expected, "input 0 (grad_output)");
  requireShape(inputs[2], expected, "input 2 (output)");
  return {x};
}

// prod / cumprod: PyTorch's formulas, from the input and the result
// (ir/ops/product.cpp).
Grads productGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  const OpKind gradient = nodeOf(b).kind() == OpKind::ReduceProduct ? OpKind::ReduceProductGrad
                                                                    : OpKind::CumulativeProductGrad;
  return {b.emit(gradient, {g[0], in(b, 0), out(b)}, copyAttrs(nodeOf(b).attrs(), {"dim"}))};
}

} // namespace

void registerProductOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"dim", AttrType::Int}};
  const std::vector<std::string> gradInputs = {"grad_output", "input", "output"};
  registry.add(OpKind::ReduceProduct, 1, 1, {"input"}, attrs, inferReduceProduct);
  registry.add(OpKind::ReduceProductGrad, 3, 3, gradInputs, attrs,
               [](const std::vector<TensorType>& inputs, const Attributes& a) {
                 return inferProductGrad(inputs, a, false);
               });
  registry.add(OpKind::CumulativeProduct, 1, 1, {"input"}, attrs, inferCumulativeProduct);
  registry.add(OpKind::CumulativeProductGrad, 3, 3, gradInputs, attrs,
               [](const std::vector<TensorType>& inputs, const Attributes& a) {
                 return inferProductGrad(inputs, a, true);
               });
  registry.setGradient(OpKind::ReduceProduct, productGradient);
  registry.setGradient(OpKind::CumulativeProduct, productGradient);
  registry.setWork(OpKind::ReduceProduct, work::reduction<1>);
  registry.setWork(OpKind::ReduceProductGrad, work::elementwise<1>);
  registry.setWork(OpKind::CumulativeProduct, work::elementwise<1>);
  registry.setWork(OpKind::CumulativeProductGrad, work::elementwise<1>);
}

} // namespace popsim::ir::ops
