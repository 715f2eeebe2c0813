#include "common/check.h"
#include "kernels/reference/families.h"

#include <algorithm>
#include <cstring>

namespace popsim::kernels::reference {

// assign(variable, value), accumulate(accumulator, value), fill(variable):
// in-place writes of device variables.
void updates(const ir::Node& node, const Inputs& inputs, const Outputs&) {
  const ir::TensorType& type = node.input(0)->type();
  switch (node.kind()) {
  case ir::OpKind::Assign:
    if (inputs[0] != inputs[1] && type.storageBytes() != 0) {
      std::memcpy(inputs[0], inputs[1], type.storageBytes());
    }
    return;
  case ir::OpKind::Accumulate: {
    auto* accumulator = static_cast<float*>(inputs[0]);
    const auto* value = static_cast<const float*>(inputs[1]);
    if (inputs.size() == 2) {
      for (int64_t i = 0; i < type.numel(); ++i) {
        accumulator[i] += value[i];
      }
      return;
    }
    // The running mean of PopART's accumulator: the f-th value of a step
    // weighs 1 / (f + 1), what was there f / (f + 1), each factor rounded
    // to float.
    auto* count = static_cast<int64_t*>(inputs[2]);
    const auto f = static_cast<double>(*count % node.attrs().getInt("every"));
    const auto keep = static_cast<float>(f / (f + 1.0));
    const auto add = static_cast<float>(1.0 / (f + 1.0));
    for (int64_t i = 0; i < type.numel(); ++i) {
      accumulator[i] = accumulator[i] * keep + value[i] * add;
    }
    ++*count;
    return;
  }
  case ir::OpKind::Fill: {
    POPSIM_ASSERT(ir::isFloat(type.dtype), "fill of a ", type.str(), " variable.");
    auto* data = static_cast<float*>(inputs[0]);
    std::fill(data, data + type.numel(), static_cast<float>(node.attrs().getFloat("value")));
    return;
  }
  default: POPSIM_ASSERT(false, node.name(), " is not an update op.");
  }
}

} // namespace popsim::kernels::reference
