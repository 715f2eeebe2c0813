#pragma once

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cstdint>
#include <string>
#include <vector>

namespace popsim::frontend {

// A pipeline block given by a module path ("encoder.layer.3"), for models
// that carry no popsim.Block markers: TorchScript modules a LibTorch program
// loads, annotated through the C++ API's execution strategies.
struct ModuleBlock {
  std::string modulePath; // also the block's name
  int64_t ipu = -1;
};

// The module path a node of an inlined graph was called from ("layer1.conv"),
// from its inlined call stack; empty for the top-level module's own ops.
std::string modulePathOf(const torch::jit::Node& node);

// Which block each node of an inlined graph belongs to, as popsim.BeginBlock
// places them: a listed module's ops and every op after them, until the next
// listed module's first op, belong to its block; ops before the first listed
// module's belong to that first block.
class ModuleBlocks {
public:
  // Throws InvalidOption naming a listed path that is no module of `self`
  // (with the model's modules), or that no op of the graph runs in.
  ModuleBlocks(std::vector<ModuleBlock> blocks, const torch::jit::Graph& graph,
               const torch::jit::Module& self);

  // The block the graph starts in (the first listed module its ops enter).
  const ModuleBlock* first() const { return first_; }
  // The listed block whose module runs `node`, or nullptr when the node runs
  // in none (it then stays in the block before it).
  const ModuleBlock* blockOf(const torch::jit::Node& node) const;

private:
  std::vector<ModuleBlock> blocks_;
  const ModuleBlock* first_ = nullptr;
};

} // namespace popsim::frontend
