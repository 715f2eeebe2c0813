#include "kernels/reference/reference_ops.h"

#include "common/check.h"
#include "kernels/host_callbacks.h"
#include "kernels/reference/families.h"

#include <cstring>

namespace popsim::kernels::reference {

void evaluate(const ir::Node& node, const std::vector<void*>& inputs,
              const std::vector<void*>& outputs) {
  POPSIM_ASSERT(inputs.size() == node.inputs().size() && outputs.size() == node.outputs().size(),
                "reference ", node.name(), " given the wrong number of buffers.");
  switch (ir::opFamily(node.kind())) {
  case ir::OpFamily::Convolution: return convolution(node, inputs, outputs);
  case ir::OpFamily::MatMul: return matmul(node, inputs, outputs);
  case ir::OpFamily::Unary: return unaryElementwise(node, inputs, outputs);
  case ir::OpFamily::Binary: return binaryElementwise(node, inputs, outputs);
  case ir::OpFamily::Softmax: return softmax(node, inputs, outputs);
  case ir::OpFamily::Pooling: return pooling(node, inputs, outputs);
  case ir::OpFamily::Normalization: return normalization(node, inputs, outputs);
  case ir::OpFamily::Layout: return layout(node, inputs, outputs);
  case ir::OpFamily::Reduction: return reduction(node, inputs, outputs);
  case ir::OpFamily::Embedding: return embedding(node, inputs, outputs);
  case ir::OpFamily::ElementwiseGrad: return elementwiseGrad(node, inputs, outputs);
  case ir::OpFamily::Pointwise: return pointwise(node, inputs, outputs);
  case ir::OpFamily::BinaryFunction:
  case ir::OpFamily::Where: return binaryPointwise(node, inputs, outputs);
  case ir::OpFamily::Extremum: return extremum(node, inputs, outputs);
  case ir::OpFamily::Scan: return scan(node, inputs, outputs);
  case ir::OpFamily::Product: return product(node, inputs, outputs);
  case ir::OpFamily::Check: return checks(node, inputs, outputs);
  case ir::OpFamily::Indexing: return gatherScatter(node, inputs, outputs);
  case ir::OpFamily::Sort: return sort(node, inputs, outputs);
  case ir::OpFamily::Random: return random(node, inputs, outputs);
  case ir::OpFamily::Loss: return loss(node, inputs, outputs);
  case ir::OpFamily::Update: return updates(node, inputs, outputs);
  case ir::OpFamily::Optimizer: return optimizer(node, inputs, outputs);
  case ir::OpFamily::Transfer:
    std::memcpy(outputs[0], inputs[0], node.output()->type().storageBytes());
    return;
  case ir::OpFamily::Host: return hostCall(node, inputs, outputs);
  case ir::OpFamily::Collective: break;     // needs the replicas (replica_kernels.h)
  case ir::OpFamily::CustomGradient: break; // removed before programs run (custom_gradients.cpp)
  }
  POPSIM_ASSERT(false, "no reference kernel for ", node.name(), ".");
}

} // namespace popsim::kernels::reference
