#pragma once

#include "runtime/executable.h"
#include "runtime/tensor_view.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace popsim::frontend {

// One call of an executable on host tensors, ready to run: the inputs'
// views (of contiguous copies where needed), and the output tensors with
// their views. A cost-only executable reads no values: its inputs' views
// carry only their types and its outputs are tensors without values, on
// torch's meta device. Run it with
// `executable.run(call.inputViews, call.outputViews)`, then use `outputs`.
struct HostCall {
  std::vector<at::Tensor> inputs; // contiguous, kept alive for the views
  std::vector<runtime::TensorView> inputViews;
  std::vector<at::Tensor> outputs;
  std::vector<runtime::TensorView> outputViews;
};

// Throws InvalidInput naming an input that is not a CPU tensor of a dtype
// popsim computes with (the executable checks shapes and dtypes as it runs).
HostCall prepareHostCall(const runtime::Executable& executable,
                         const std::vector<at::Tensor>& inputs);

} // namespace popsim::frontend
