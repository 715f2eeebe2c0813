#include "kernels/reference/reference_ops.h"

#include "common/check.h"
#include "kernels/reference/families.h"

namespace popsim::kernels::reference {

void evaluate(const ir::Node& node, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs) {
  POPSIM_ASSERT(inputs.size() == node.inputs().size() && outputs.size() == node.outputs().size(),
                "reference ", node.name(), " given the wrong number of buffers.");
  using ir::OpKind;
  switch (node.kind()) {
  case OpKind::Conv2d: return convolution(node, inputs, outputs);
  case OpKind::Linear:
  case OpKind::MatMul: return matmul(node, inputs, outputs);
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Affine: return unaryElementwise(node, inputs, outputs);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div: return binaryElementwise(node, inputs, outputs);
  case OpKind::Softmax:
  case OpKind::LogSoftmax: return softmax(node, inputs, outputs);
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d:
  case OpKind::AdaptiveAvgPool2d: return pooling(node, inputs, outputs);
  case OpKind::BatchNorm:
  case OpKind::LayerNorm: return normalization(node, inputs, outputs);
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Slice:
  case OpKind::Concat: return layout(node, inputs, outputs);
  case OpKind::ReduceSum:
  case OpKind::ReduceMean: return reduction(node, inputs, outputs);
  case OpKind::Embedding: return embedding(node, inputs, outputs);
  }
  POPSIM_ASSERT(false, "no reference kernel for ", node.name(), ".");
}

} // namespace popsim::kernels::reference
