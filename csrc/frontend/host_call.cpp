#include "frontend/host_call.h"

#include "frontend/tensor_conversion.h"

#include <ATen/ATen.h>

#include <string>

namespace popsim::frontend {
HostCall prepareHostCall(bool costOnly, const std::vector<ir::TensorType>& outputTypes,
                         const std::vector<at::Tensor>& inputs) {
  HostCall call;
  if (costOnly) {
    // Only the inputs' types are checked; their values are never read.
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::TensorType type = typeOf(inputs[i], "input " + std::to_string(i));
      call.inputViews.push_back({nullptr, type.dtype, type.shape});
    }
    for (const ir::TensorType& type : outputTypes)
      call.outputs.push_back(metaTensor(type));
    return call;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    call.inputs.push_back(inputs[i].contiguous());
    call.inputViews.push_back(viewOf(call.inputs.back(), "input " + std::to_string(i)));
  }
  for (const ir::TensorType& type : outputTypes) {
    call.outputs.push_back(emptyTensor(type));
    call.outputViews.push_back(viewOf(call.outputs.back(), "output"));
  }
  return call;
}

} // namespace popsim::frontend
