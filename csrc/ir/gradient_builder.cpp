#include "ir/gradient_builder.h"

#include "common/check.h"

#include <algorithm>

namespace popsim::ir {

GradientBuilder::GradientBuilder(Graph& graph, const Node& forward)
    : graph_(graph), forward_(forward) {}

std::vector<Value*> GradientBuilder::emitMulti(OpKind kind, const std::vector<Value*>& inputs,
                                               Attributes attrs) {
  Node* node = graph_.addNode(kind, inputs, std::move(attrs), forward_.location());
  Placement placement = forward_.placement();
  placement.phase = Phase::Backward;
  node->setPlacement(placement);
  return node->outputs();
}

Value* GradientBuilder::emit(OpKind kind, const std::vector<Value*>& inputs, Attributes attrs) {
  const std::vector<Value*> outputs = emitMulti(kind, inputs, std::move(attrs));
  POPSIM_ASSERT(outputs.size() == 1, "emit() of multi-output op ", opKindName(kind), ".");
  return outputs[0];
}

Value* GradientBuilder::reshape(Value* value, const Shape& shape) {
  if (value->type().shape == shape) {
    return value;
  }
  return emit(OpKind::Reshape, {value}, {{"shape", shape}});
}

Value* GradientBuilder::zeros(const Shape& shape) {
  DType dtype = DType::Float32;
  for (const Value* input : forward_.inputs()) {
    if (isFloat(input->type().dtype)) {
      dtype = input->type().dtype;
      break;
    }
  }
  return zerosOf({dtype, shape});
}

Value* GradientBuilder::zerosOf(const TensorType& type) {
  Value* zero = graph_.addScalarConstant(0.0f, type.dtype);
  return type.shape.empty() ? zero : emit(OpKind::Broadcast, {zero}, {{"shape", type.shape}});
}

Value* GradientBuilder::affine(Value* value, double scale, double shift) {
  if (scale == 1.0 && shift == 0.0) {
    return value;
  }
  return emit(OpKind::Affine, {value}, {{"scale", scale}, {"shift", shift}});
}

Value* GradientBuilder::sumToShape(Value* gradient, const Shape& shape) {
  const Shape& from = gradient->type().shape;
  if (from == shape) {
    return gradient;
  }
  // Leading dimensions the operand lacks, and dimensions it has as 1.
  const size_t extra = from.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < from.size(); ++d) {
    if (d < extra || (shape[d - extra] == 1 && from[d] != 1)) {
      dims.push_back(static_cast<int64_t>(d));
    }
  }
  Value* summed = dims.empty()
                      ? gradient
                      : emit(OpKind::ReduceSum, {gradient}, {{"dims", dims}, {"keepdim", true}});
  return reshape(summed, shape);
}

Value* GradientBuilder::transposeLast(Value* value) {
  const int64_t rank = value->type().rank();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return emit(OpKind::Permute, {value}, {{"perm", perm}});
}

} // namespace popsim::ir
