#pragma once

#include "ir/tensor_type.h"
#include "runtime/tensor_view.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace popsim::frontend {

// A view of a contiguous CPU tensor; throws InvalidInput naming `what` for
// other devices or dtypes popsim does not compute with. float64 is accepted
// only for device state (optimizer hyper-parameters), not model inputs.
runtime::TensorView viewOf(const at::Tensor& tensor, const std::string& what,
                           bool allowFloat64 = false);
ir::TensorType typeOf(const at::Tensor& tensor, const std::string& what, bool allowFloat64 = false);
at::Tensor emptyTensor(const ir::TensorType& type);
// A tensor of `type` without values (torch's meta device): what a cost-only
// program gives where values would be.
at::Tensor metaTensor(const ir::TensorType& type);
// A tensor over `data` (not a copy), valid while the memory is.
at::Tensor tensorOver(void* data, const ir::TensorType& type);

} // namespace popsim::frontend
