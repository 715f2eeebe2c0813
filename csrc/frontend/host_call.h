#pragma once

#include "ir/tensor_type.h"
#include "runtime/tensor_view.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace popsim::frontend {

// One call of a program on host tensors, ready to run: the inputs' views (of
// contiguous copies where needed), and the output tensors with their views.
// A cost-only program reads no values: its inputs' views carry only their
// types and its outputs are tensors without values, on torch's meta device.
// Run it with `program.run(call.inputViews, call.outputViews)` (an
// Executable or a host::DeviceProgram), then use `outputs`.
struct HostCall {
  std::vector<at::Tensor> inputs; // contiguous, kept alive for the views
  std::vector<runtime::TensorView> inputViews;
  std::vector<at::Tensor> outputs;
  std::vector<runtime::TensorView> outputViews;
};

// Throws InvalidInput naming an input that is not a CPU tensor of a dtype
// popsim computes with (the executable checks shapes and dtypes as it runs).
// `outputTypes` are the call's outputs' host types.
HostCall prepareHostCall(bool costOnly, const std::vector<ir::TensorType>& outputTypes,
                         const std::vector<at::Tensor>& inputs);

} // namespace popsim::frontend
