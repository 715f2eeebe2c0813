#include "frontend/tracer.h"

#include "common/check.h"

#include <torch/csrc/jit/frontend/tracer.h>

namespace popsim::frontend {
namespace {

// A TorchScript module with the same tree of parameters and buffers as a
// LibTorch module. The tensors are shared, so the tracer maps each one used
// in `forward` to a prim::GetAttr of its path.
torch::jit::Module mirror(const torch::nn::Module& module,
                          const std::shared_ptr<torch::jit::CompilationUnit>& unit, int& counter) {
  torch::jit::Module copy(c10::QualifiedName("__torch__.popsim.Traced" + std::to_string(counter++)),
                          unit);
  for (const auto& parameter : module.named_parameters(/*recurse=*/false)) {
    copy.register_parameter(parameter.key(), parameter.value(), /*is_buffer=*/false);
  }
  for (const auto& buffer : module.named_buffers(/*recurse=*/false)) {
    copy.register_buffer(buffer.key(), buffer.value());
  }
  for (const auto& child : module.named_children()) {
    copy.register_module(child.key(), mirror(*child.value(), unit, counter));
  }
  return copy;
}

std::shared_ptr<torch::jit::Graph>
trace(torch::jit::Module& self, const std::function<torch::jit::Stack(torch::jit::Stack)>& fn,
      const std::vector<at::Tensor>& examples) {
  torch::jit::Stack inputs(examples.begin(), examples.end());
  auto traced = torch::jit::tracer::trace(
      std::move(inputs), fn, [](const at::Tensor&) { return std::string(); },
      /*strict=*/false, /*force_outplace=*/false, &self);
  return traced.first->graph;
}

} // namespace

TracedModule traceModule(const torch::nn::Module& owner, const ForwardFn& forward,
                         const std::vector<at::Tensor>& examples) {
  int counter = 0;
  torch::jit::Module module =
      mirror(owner, std::make_shared<torch::jit::CompilationUnit>(), counter);
  auto fn = [&](torch::jit::Stack stack) {
    std::vector<at::Tensor> inputs;
    for (const c10::IValue& value : stack) {
      inputs.push_back(value.toTensor());
    }
    torch::jit::Stack outputs;
    for (const at::Tensor& output : forward(inputs)) {
      outputs.emplace_back(output);
    }
    return outputs;
  };
  std::shared_ptr<torch::jit::Graph> graph = trace(module, fn, examples);
  return {module, graph};
}

TracedModule traceModule(const torch::jit::Module& scripted,
                         const std::vector<at::Tensor>& examples) {
  torch::jit::Module module = scripted;
  auto fn = [&](torch::jit::Stack stack) {
    std::vector<c10::IValue> arguments(stack.begin(), stack.end());
    const c10::IValue result = module.forward(arguments);
    torch::jit::Stack outputs;
    if (result.isTuple()) {
      for (const c10::IValue& element : result.toTupleRef().elements()) {
        outputs.push_back(element);
      }
    } else {
      outputs.push_back(result);
    }
    return outputs;
  };
  std::shared_ptr<torch::jit::Graph> graph = trace(module, fn, examples);
  return {module, graph};
}

} // namespace popsim::frontend
