#pragma once

#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <vector>

namespace popsim::frontend {

// A traced program: the graph (first input `self`) and the module whose
// parameters and buffers the graph reads by attribute path.
struct TracedModule {
  torch::jit::Module module;
  std::shared_ptr<torch::jit::Graph> graph;
};

using ForwardFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// Traces `forward` on example inputs. The parameters and buffers of `owner`
// (a LibTorch torch::nn::Module) become attributes with their dotted paths,
// so the IR names weights as named_parameters() does.
TracedModule traceModule(const torch::nn::Module& owner, const ForwardFn& forward,
                         const std::vector<at::Tensor>& examples);

// Traces the forward method of a TorchScript module on example inputs.
TracedModule traceModule(const torch::jit::Module& module, const std::vector<at::Tensor>& examples);

} // namespace popsim::frontend
