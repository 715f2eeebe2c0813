#pragma once

#include "frontend/module_blocks.h"
#include "frontend/value_structure.h"
#include "ir/graph.h"

#include <torch/csrc/jit/api/module.h>

#include <memory>
#include <string>
#include <vector>

namespace popsim::frontend {

struct ImportOptions {
  // Parts of the paths of library code (PyTorch's and popsim's directories,
  // or Options.sourceLocationExcludes). Source locations point at the first
  // stack frame whose file contains none of them: the line the user wrote.
  std::vector<std::string> libraryPaths;
  // Attribute holding the user's model inside the traced module (e.g. "model"
  // when a wrapper was traced); removed from weight names. Empty: none.
  std::string modelAttribute;
  // Names for the graph inputs (optional; used in errors and the printed IR),
  // one per tensor.
  std::vector<std::string> inputNames;
  // How each of forward()'s inputs nests its tensors (tuples, lists, dicts of
  // tensors, as the C++ API's IValue inputs give them); `inputTypes` are
  // their tensors in order. Empty: each input is one tensor.
  std::vector<ValueStructure> inputStructures;
  // Import for training: batch norm uses batch statistics and updates its
  // running statistics, dropout draws masks, and the loss is identified.
  bool training = false;
  // Seed of dropout masks (training).
  int64_t randomSeed = 0;
  // PopTorch's FloatDowncastToHalf (Precision.halfFloatCasting, and the
  // default of its legacy tracing frontend): an op whose float operands mix
  // float16 and float32 computes in float16. False: PyTorch's promotion
  // (HalfUpcastToFloat, the default), for every op, products included.
  bool downcastMixedFloats = true;
  // Pipeline blocks by module path, for graphs without popsim.Block markers
  // (TorchScript modules annotated through the C++ API); see ModuleBlocks.
  std::vector<ModuleBlock> moduleBlocks;
  // Name each op after the module path it runs in ("layer1/conv/convolution"),
  // from the inlined graph's call stacks, as Python's tracing does with its
  // module hooks (Options.disableModuleNamescope turns both off); for
  // TorchScript modules, which carry no hooks.
  bool moduleScopes = false;
};

// Lowers a TorchScript graph whose first input is `self` (the module holding
// parameters) to popsim IR:
// 1. inlines method calls;
// 2. turns parameters and buffers into named weights;
// 3. evaluates everything that does not depend on runtime tensors (shape
//    arithmetic, constants) at compile time with PyTorch's own operators;
// 4. lowers each remaining aten op through the lowering registry.
// Throws popsim::CoreError(Unsupported) listing every unsupported op with the
// user's source line, before anything runs. For training, the graph's loss
// is the one output that depends on a loss function (or on
// popsim.identity_loss); none, several or a non-scalar one is an error.
// The graph's outputs are the model's tensors, flattened depth-first from
// the tuples, lists and dicts it returns; `outputStructure`, when given,
// receives how they nest.
std::unique_ptr<ir::Graph> importGraph(const std::shared_ptr<torch::jit::Graph>& graph,
                                       const torch::jit::Module& self,
                                       const std::vector<ir::TensorType>& inputTypes,
                                       const ImportOptions& options = {},
                                       ValueStructure* outputStructure = nullptr);

// importGraph on the module's forward method.
std::unique_ptr<ir::Graph> importModule(const torch::jit::Module& module,
                                        const std::vector<ir::TensorType>& inputTypes,
                                        const ImportOptions& options = {},
                                        ValueStructure* outputStructure = nullptr);

} // namespace popsim::frontend
