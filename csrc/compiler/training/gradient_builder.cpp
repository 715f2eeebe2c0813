#include "compiler/training/gradient_builder.h"

#include "common/check.h"

#include <algorithm>

namespace popsim::compiler {

GradientBuilder::GradientBuilder(ir::Graph& graph, const ir::Node& forward)
    : graph_(graph), forward_(forward) {}

std::vector<ir::Value*> GradientBuilder::emitMulti(ir::OpKind kind,
                                                   const std::vector<ir::Value*>& inputs,
                                                   ir::Attributes attrs) {
  ir::Node* node = graph_.addNode(kind, inputs, std::move(attrs), forward_.location());
  ir::Placement placement = forward_.placement();
  placement.phase = ir::Phase::Backward;
  node->setPlacement(placement);
  return node->outputs();
}

ir::Value* GradientBuilder::emit(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                                 ir::Attributes attrs) {
  const std::vector<ir::Value*> outputs = emitMulti(kind, inputs, std::move(attrs));
  POPSIM_ASSERT(outputs.size() == 1, "emit() of multi-output op ", ir::opKindName(kind), ".");
  return outputs[0];
}

ir::Value* GradientBuilder::reshape(ir::Value* value, const ir::Shape& shape) {
  if (value->type().shape == shape) {
    return value;
  }
  return emit(ir::OpKind::Reshape, {value}, {{"shape", shape}});
}

ir::Value* GradientBuilder::zeros(const ir::Shape& shape) {
  ir::DType dtype = ir::DType::Float32;
  for (const ir::Value* input : forward_.inputs()) {
    if (ir::isFloat(input->type().dtype)) {
      dtype = input->type().dtype;
      break;
    }
  }
  ir::Value* zero = graph_.addScalarConstant(0.0f, dtype);
  return shape.empty() ? zero : emit(ir::OpKind::Broadcast, {zero}, {{"shape", shape}});
}

ir::Value* GradientBuilder::affine(ir::Value* value, double scale, double shift) {
  if (scale == 1.0 && shift == 0.0) {
    return value;
  }
  return emit(ir::OpKind::Affine, {value}, {{"scale", scale}, {"shift", shift}});
}

ir::Value* GradientBuilder::sumToShape(ir::Value* gradient, const ir::Shape& shape) {
  const ir::Shape& from = gradient->type().shape;
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
  ir::Value* summed =
      dims.empty() ? gradient
                   : emit(ir::OpKind::ReduceSum, {gradient}, {{"dims", dims}, {"keepdim", true}});
  return reshape(summed, shape);
}

ir::Value* GradientBuilder::transposeLast(ir::Value* value) {
  const int64_t rank = value->type().rank();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return emit(ir::OpKind::Permute, {value}, {{"perm", perm}});
}

} // namespace popsim::compiler
