#pragma once

#include "ir/node.h"
#include "ir/tensor_type.h"

#include <functional>
#include <string>
#include <vector>

// The functions host_call ops run (PopTorch's CPU ops), registered by name
// from above the kernels (the Python bindings register Python callables).
// A simulated IPU thread calls them in the middle of a program, so a
// function must be safe to call from any thread.
namespace popsim::kernels {

// One tensor of a call, in the simulated IPU's memory (row-major).
struct HostTensor {
  void* data;
  ir::TensorType type;
};

// Reads `inputs` and fills every output, whose types are fixed; throws
// popsim::CoreError to fail the run.
using HostFunction = std::function<void(const std::vector<HostTensor>& inputs,
                                        const std::vector<HostTensor>& outputs)>;

// Registers (or replaces) the function named `id`.
void registerHostFunction(const std::string& id, HostFunction function);
// Forgets every function (at interpreter exit, before Python objects die).
void clearHostFunctions();

// Runs node (a host_call) on its buffers: an ExecutionError names the op's
// id when nothing is registered under it.
void hostCall(const ir::Node& node, const std::vector<void*>& inputs,
              const std::vector<void*>& outputs);

} // namespace popsim::kernels
