// The C++ frontend end to end: LibTorch modules traced in C++, imported into
// popsim IR, compiled and run, against LibTorch's own results.

#include "common/error.h"
#include "frontend/import.h"
#include "frontend/source_location.h"
#include "frontend/tracer.h"
#include "frontend/unsupported_ops.h"
#include "ir/printer.h"
#include "runtime/executable.h"

#include <gtest/gtest.h>
#include <map>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

namespace popsim {
namespace {

runtime::TensorView viewOf(const at::Tensor& tensor) {
  ir::DType dtype = tensor.scalar_type() == at::kLong ? ir::DType::Int64 : ir::DType::Float32;
  return {tensor.data_ptr(), dtype, ir::Shape(tensor.sizes().begin(), tensor.sizes().end())};
}

ir::TensorType typeOf(const at::Tensor& tensor) { return viewOf(tensor).type(); }

// Compiles `graph`, copies the module's tensors to the device and runs one call.
std::vector<at::Tensor> compileAndRun(const ir::Graph& graph, const torch::jit::Module& module,
                                      const std::vector<at::Tensor>& inputs) {
  auto executable = runtime::Executable::compile(graph, {});
  std::map<std::string, at::Tensor> tensors;
  for (const auto& parameter : module.named_parameters())
    tensors[parameter.name] = parameter.value;
  for (const auto& buffer : module.named_buffers())
    tensors[buffer.name] = buffer.value;
  for (const ir::Value* weight : executable->weights()) {
    executable->writeVariable(weight->name(), viewOf(tensors.at(weight->name()).contiguous()));
  }
  std::vector<runtime::TensorView> inputViews;
  for (const at::Tensor& input : inputs)
    inputViews.push_back(viewOf(input));
  std::vector<at::Tensor> outputs;
  std::vector<runtime::TensorView> outputViews;
  for (const ir::TensorType& type : executable->outputHostTypes()) {
    outputs.push_back(torch::empty(type.shape));
    outputViews.push_back(viewOf(outputs.back()));
  }
  executable->run(inputViews, outputViews);
  return outputs;
}

struct SmallNet : torch::nn::Module {
  SmallNet() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)));
    norm = register_module("norm", torch::nn::BatchNorm2d(4));
    fc = register_module("fc", torch::nn::Linear(4 * 6 * 6, 5));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::relu(norm(conv(x)));
    return torch::log_softmax(fc(y.flatten(1)), 1);
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d norm{nullptr};
  torch::nn::Linear fc{nullptr};
};

TEST(FrontendTest, TracesALibTorchModuleAndMatchesIt) {
  torch::manual_seed(0);
  auto net = std::make_shared<SmallNet>();
  net->eval();
  // Non-trivial running statistics, so that batch norm is really tested.
  net->norm->running_mean.uniform_(-0.5, 0.5);
  net->norm->running_var.uniform_(0.5, 1.5);
  const at::Tensor x = torch::randn({3, 2, 6, 6});
  const frontend::TracedModule traced =
      frontend::traceModule(*net,
                            [&](const std::vector<at::Tensor>& in) {
                              return std::vector<at::Tensor>{net->forward(in[0])};
                            },
                            {x});
  auto graph = frontend::importGraph(traced.graph, traced.module, {typeOf(x)});

  std::vector<std::string> weights;
  for (const ir::Value* weight : graph->weights())
    weights.push_back(weight->name());
  EXPECT_NE(std::find(weights.begin(), weights.end(), "conv.weight"), weights.end());
  EXPECT_NE(std::find(weights.begin(), weights.end(), "norm.running_var"), weights.end());

  torch::NoGradGuard noGrad;
  const at::Tensor expected = net->forward(x);
  const at::Tensor actual = compileAndRun(*graph, traced.module, {x})[0];
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-5, 1e-6)) << actual - expected;
}

TEST(FrontendTest, ImportsAScriptedModuleDirectly) {
  torch::jit::Module module("Scripted");
  module.register_parameter("w", torch::randn({4, 3}), false);
  module.register_buffer("offset", torch::randn({3}));
  module.define(R"(
def forward(self, x):
    return torch.tanh(torch.matmul(x, self.w) + self.offset) * 2.0
)");
  const at::Tensor x = torch::randn({5, 4});
  auto graph = frontend::importModule(module, {typeOf(x)});
  const at::Tensor expected = module.forward({x}).toTensor();
  const at::Tensor actual = compileAndRun(*graph, module, {x})[0];
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-5, 1e-6));
}

// A slice bounded by an input (frontend/tensor_bound_slices.cpp), as the
// Python tracer records `x[e : e + 3]`: compiled with the start as data, so
// that each call's start gives LibTorch's slice.
TEST(FrontendTest, ASliceBoundedByAnInputTakesItsStartAtRunTime) {
  auto traced = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Float(5, 2), %e : Long(1)):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %three : int = prim::Constant[value=3]()
  %end : Long(1) = aten::add(%e, %three, %one)
  %start_int : int = aten::Int(%e)
  %end_int : int = aten::Int(%end)
  %y : Float(3, 2) = aten::slice(%x, %zero, %start_int, %end_int, %one)
  return (%y)
)IR",
                      traced.get());
  torch::jit::Module module("SliceByInput");
  const at::Tensor x = torch::arange(10, torch::kFloat32).reshape({5, 2});
  auto graph = frontend::importGraph(traced, module, {typeOf(x), typeOf(torch::tensor({1L}))});
  auto executable = runtime::Executable::compile(*graph, {});
  for (const int64_t start : {0L, 2L}) {
    const at::Tensor e = torch::tensor({start});
    const at::Tensor expected = x.slice(0, start, start + 3);
    at::Tensor actual = torch::empty(expected.sizes());
    std::vector<runtime::TensorView> outputs{viewOf(actual)};
    executable->run({viewOf(x), viewOf(e)}, outputs);
    EXPECT_TRUE(torch::equal(actual, expected)) << "start " << start;
  }
}

// A scripted module whose forward() calls its submodules' forward(): layer1,
// then layer2 (which calls its own inner module), then ops of its own.
torch::jit::Module moduleWithLayers() {
  auto layer = [](const std::string& name, bool inner) {
    torch::jit::Module module(name);
    module.register_parameter("w", torch::randn({3, 3}), false);
    if (inner) {
      torch::jit::Module innerModule(name + "Inner");
      innerModule.define("def forward(self, x):\n    return torch.relu(x)\n");
      module.register_module("inner", innerModule);
      module.define(
          "def forward(self, x):\n    return self.inner.forward(torch.matmul(x, self.w))\n");
    } else {
      module.define("def forward(self, x):\n    return torch.matmul(x, self.w)\n");
    }
    return module;
  };
  torch::jit::Module module("Layers");
  module.register_module("layer1", layer("Layer1", false));
  module.register_module("layer2", layer("Layer2", true));
  module.define(
      "def forward(self, x):\n    return self.layer2.forward(self.layer1.forward(x)) * 2.0\n");
  return module;
}

TEST(FrontendTest, BlocksByModulePathFollowTheInlinedCallStacks) {
  torch::jit::Module module = moduleWithLayers();
  const at::Tensor x = torch::randn({2, 3});
  frontend::ImportOptions options;
  options.moduleBlocks = {{"layer1", 0}, {"layer2", 1}};
  auto graph = frontend::importModule(module, {typeOf(x)}, options);
  ASSERT_EQ(graph->blocks().size(), 2u);
  EXPECT_EQ(graph->blocks()[0].name, "layer1");
  EXPECT_EQ(graph->blocks()[1].ipu, 1);
  std::map<std::string, std::vector<std::string>> opsByBlock;
  for (const auto& node : graph->nodes())
    opsByBlock[node->placement().block].push_back(std::string(node->name()));
  // layer1's matmul; layer2's matmul, its inner module's relu and, after it,
  // the top-level multiplication (a block lasts until the next one starts).
  EXPECT_EQ(opsByBlock["layer1"].size(), 1u);
  EXPECT_EQ(opsByBlock["layer2"].size(), 3u);
  EXPECT_EQ(opsByBlock.count(""), 0u);

  options.moduleBlocks = {{"layer1", 0}, {"layer3", 1}};
  try {
    frontend::importModule(module, {typeOf(x)}, options);
    ADD_FAILURE() << "an unknown module path was accepted";
  } catch (const CoreError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
    EXPECT_NE(std::string(error.what())
                  .find("places module 'layer3', but the model has no module of that path (its "
                        "top-level modules: layer1, layer2)"),
              std::string::npos)
        << error.what();
  }
}

TEST(FrontendTest, TracesAScriptedModule) {
  torch::jit::Module module("ScriptedForTrace");
  module.register_parameter("w", torch::randn({6, 2}), false);
  module.define(R"(
def forward(self, x):
    y = torch.relu(x.view(x.size(0), -1))
    return torch.matmul(y, self.w).sum(1)
)");
  const at::Tensor x = torch::randn({4, 2, 3});
  const frontend::TracedModule traced = frontend::traceModule(module, {x});
  auto graph = frontend::importGraph(traced.graph, traced.module, {typeOf(x)});
  const at::Tensor expected = module.forward({x}).toTensor();
  const at::Tensor actual = compileAndRun(*graph, module, {x})[0];
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-5, 1e-6));
}

TEST(FrontendTest, ListsEveryUnsupportedOp) {
  torch::nn::Linear linear(3, 3);
  const at::Tensor x = torch::randn({2, 3});
  const frontend::TracedModule traced =
      frontend::traceModule(*linear,
                            [&](const std::vector<at::Tensor>& in) {
                              return std::vector<at::Tensor>{at::special_zeta(
                                  at::igamma(linear(in[0]).sigmoid(), in[0].exp()), 2.0)};
                            },
                            {x});
  try {
    frontend::importGraph(traced.graph, traced.module, {typeOf(x)});
    FAIL() << "expected an unsupported-op error";
  } catch (const CoreError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
    const std::string message = error.what();
    EXPECT_NE(message.find("Unsupported ops found in compiled model: [aten::igamma, "
                           "aten::special_zeta]"),
              std::string::npos)
        << message;
  }
}

TEST(FrontendTest, GroupsUnsupportedOpsWithTheirUsesAndDistinctLines) {
  std::vector<frontend::UnsupportedOp> uses;
  for (int64_t use = 0; use < 35; ++use) {
    uses.push_back({"aten::hardtanh_", {"/m/net.py", 10 + use % 7, "forward", "", ""}, ""});
  }
  uses.push_back({"aten::erfinv", {"/m/net.py", 3, "head", "", ""}, ""});
  uses.push_back({"aten::add", {"/m/net.py", 4, "", "", ""}, "a dtype"});
  uses.push_back({"aten::add", {"/m/net.py", 4, "", "", ""}, "a dtype"});
  // An op the tracer made (no source line) is named by its module.
  uses.push_back({"aten::Int", {}, "", "features.1.0.attn"});
  uses.push_back({"aten::Int", {}, "", ""});
  EXPECT_EQ(
      frontend::unsupportedOpsMessage(uses),
      "Unsupported ops found in compiled model: [aten::Int, aten::add, aten::erfinv, "
      "aten::hardtanh_]\n"
      "  aten::hardtanh_, 35 uses at 7 lines: /m/net.py:10 (in forward), /m/net.py:11 (in "
      "forward), /m/net.py:12 (in forward), /m/net.py:13 (in forward), /m/net.py:14 (in "
      "forward) and 2 more\n"
      "  aten::erfinv at /m/net.py:3 (in head)\n"
      "  aten::add, 2 uses at /m/net.py:4: a dtype\n"
      "  aten::Int, 2 uses at 2 lines: <unknown location> (in module features.1.0.attn), "
      "<unknown location>\n"
      "Rewrite these parts of the model with supported ops (the Supported ops page of popsim's "
      "documentation lists them), or run them on the host before calling the popsim model.");
}

TEST(FrontendTest, ParsesTheUserFrameOfATracedStack) {
  const std::string stack =
      "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py(459): _conv_forward\n"
      "/home/user/model.py(12): forward\n"
      "/usr/lib/python3/dist-packages/torch/nn/modules/module.py(1194): _call_impl\n";
  const ir::SourceLocation location =
      frontend::parseTracedStack(stack, {"/usr/lib/python3/dist-packages/torch/"});
  EXPECT_EQ(location.file, "/home/user/model.py");
  EXPECT_EQ(location.line, 12);
  EXPECT_EQ(location.function, "forward");
}

} // namespace
} // namespace popsim
