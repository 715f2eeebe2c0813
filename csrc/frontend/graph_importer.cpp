// Import of a TorchScript graph into popsim IR (see import.h for the steps).
//
// Every TorchScript value maps to a FrontendValue. Nodes are visited in
// order:
// - prim nodes (constants, attributes, lists, tuples) build compile-time or
//   list values;
// - size queries on runtime tensors answer from the static IR types;
// - a deterministic op whose inputs are all compile-time values is run right
//   away with PyTorch's own implementation (shape arithmetic, torch.arange...);
// - any other op goes to its lowering, which emits IR ops;
// - an op without a lowering is recorded as unsupported, and values computed
//   from it are "poisoned" so that later ops are still checked for support.
// At the end, all unsupported ops are reported in one error.

#include "common/check.h"
#include "frontend/aliasing.h"
#include "frontend/dtype_conversion.h"
#include "frontend/import.h"
#include "frontend/loss_identification.h"
#include "frontend/lowering_registry.h"
#include "frontend/masked_copies.h"
#include "frontend/module_blocks.h"
#include "frontend/node_context.h"
#include "frontend/overlap_marks.h"
#include "frontend/source_location.h"
#include "frontend/tensor_bound_slices.h"
#include "frontend/unsupported_ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace popsim::frontend {
namespace {

namespace jit = torch::jit;

// The block of the ops a model runs before it enters its first block (on IPU 0).
constexpr const char* kBeforeTheFirstBlock = "before the first block";

bool isModuleObject(const c10::IValue& value) {
  return value.isObject() && value.toObjectRef().type()->is_module();
}

std::string joinPath(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

class GraphImporter {
public:
  GraphImporter(const jit::Module& self, const std::vector<ir::TensorType>& inputTypes,
                const ImportOptions& options)
      : self_(self), inputTypes_(inputTypes), options_(options),
        graph_(std::make_unique<ir::Graph>()), constants_(*graph_),
        aliasing_(*graph_, options.training) {
    state_.training = options.training;
    state_.randomSeed = options.randomSeed;
    state_.downcastMixedFloats = options.downcastMixedFloats;
  }

  std::unique_ptr<ir::Graph> run(const std::shared_ptr<jit::Graph>& source,
                                 ValueStructure* outputStructure) {
    outputStructure_ = outputStructure;
    std::shared_ptr<jit::Graph> graph = source->copy();
    jit::Inline(*graph);
    rewriteTensorBoundSlices(*graph, options_.libraryPaths);
    rewriteMaskedCopies(*graph);
    jit::EliminateDeadCode(graph);
    overlaps_ = collectOverlapMarks(*graph, options_.libraryPaths);
    const ModuleBlocks moduleBlocks(options_.moduleBlocks, *graph, self_);
    if (moduleBlocks.first() != nullptr) {
      enterBlock(*moduleBlocks.first(), **graph->nodes().begin());
    }
    bindInputs(*graph);
    moduleBlocks_ = &moduleBlocks;
    for (const jit::Node* node : graph->nodes()) {
      importNode(*node);
    }
    moduleBlocks_ = nullptr;
    reportUnsupported();
    checkEveryOpInABlock();
    std::vector<ValueStructure> returned;
    for (const jit::Value* output : graph->outputs()) {
      returned.push_back(addOutputs(currentValue(output), *output->type()));
    }
    if (outputStructure_ != nullptr) {
      if (returned.size() == 1) {
        *outputStructure_ = std::move(returned.front());
      } else { // a traced graph's several outputs: a tuple
        outputStructure_->kind = ValueStructure::Kind::Tuple;
        outputStructure_->elements = std::move(returned);
      }
    }
    for (size_t i = 0; i < graph_->outputs().size(); ++i) {
      auto marked = overlappedOutputs_.find(graph_->outputs()[i]);
      if (marked != overlappedOutputs_.end()) graph_->setOutputOverlap(i, marked->second);
    }
    for (const auto& [input, contents] : aliasing_.writtenInputs()) {
      graph_->addInputUpdate(input, contents);
    }
    if (options_.training) {
      identifyLoss(*graph_, state_.losses);
    }
    return std::move(graph_);
  }

private:
  void bindInputs(const jit::Graph& graph) {
    auto inputs = graph.inputs();
    size_t first = 0;
    if (!inputs.empty() && inputs[0]->type()->cast<c10::ClassType>()) {
      values_[inputs[0]] = FrontendValue::ofStatic(self_._ivalue(), "");
      first = 1;
    }
    const size_t count = inputs.size() - first;
    const std::vector<ValueStructure>& structures = options_.inputStructures;
    if (structures.empty()) { // one tensor each
      POPSIM_CHECK(count == inputTypes_.size(), ErrorKind::InvalidInput, "the traced model takes ",
                   count, " tensor input(s) but ", inputTypes_.size(), " were given.");
    } else {
      size_t tensors = 0;
      for (const ValueStructure& structure : structures)
        tensors += structure.tensorCount();
      POPSIM_CHECK(count == structures.size() && tensors == inputTypes_.size(),
                   ErrorKind::InvalidInput, "the model's forward() takes ", count, " input(s) but ",
                   structures.size(), " were given.");
    }
    for (size_t i = 0; i < count; ++i) {
      const jit::Value* input = inputs[first + i];
      const size_t index = graph_->inputs().size();
      values_[input] = structures.empty()
                           ? bindTensor(index)
                           : bindStructure(*input->type(), structures[i], input->debugNameBase());
      auto marked = overlaps_.inputs.find(input);
      if (marked != overlaps_.inputs.end() && graph_->inputs().size() == index + 1)
        graph_->setInputOverlap(index, marked->second);
    }
  }

  // The next graph input, a tensor.
  FrontendValue bindTensor(size_t index) {
    std::string name = index < options_.inputNames.size() ? options_.inputNames[index]
                                                          : "input" + std::to_string(index);
    return aliasing_.root(graph_->addInput(name, inputTypes_[index]));
  }

  // An input forward() takes as a tuple, list or dict of tensors: each tensor
  // is a graph input of its own, in the structure's order.
  // `parameter`: forward()'s parameter the value is (part of), for errors.
  FrontendValue bindStructure(const c10::Type& type, const ValueStructure& structure,
                              const std::string& parameter) {
    using Kind = ValueStructure::Kind;
    const char* const kinds[] = {"a tensor", "a tuple", "a list", "a dict"};
    const std::string given = kinds[static_cast<int>(structure.kind)];
    const size_t index = graph_->inputs().size();
    const auto refuse = [&](const std::string& expected) {
      throwError(ErrorKind::InvalidInput, "forward() takes " + type.annotation_str() +
                                              " where the example input (" + parameter + ") is " +
                                              given + (expected.empty() ? "" : " " + expected) +
                                              ". Give each input as forward() types it.");
    };
    switch (structure.kind) {
    case Kind::Tensor: {
      const auto* optional = type.castRaw<c10::OptionalType>();
      const c10::Type& tensor = optional != nullptr ? *optional->getElementType() : type;
      if (tensor.castRaw<c10::TensorType>() == nullptr) refuse("");
      return bindTensor(index);
    }
    case Kind::Tuple: {
      const auto* tuple = type.castRaw<c10::TupleType>();
      if (tuple == nullptr || tuple->elements().size() != structure.elements.size())
        refuse("of " + std::to_string(structure.elements.size()));
      std::vector<FrontendValue> elements;
      for (size_t i = 0; i < structure.elements.size(); ++i)
        elements.push_back(bindStructure(*tuple->elements()[i], structure.elements[i], parameter));
      return FrontendValue::ofList(std::move(elements));
    }
    case Kind::List: {
      const auto* list = type.castRaw<c10::ListType>();
      if (list == nullptr) refuse("");
      std::vector<FrontendValue> elements;
      for (const ValueStructure& element : structure.elements)
        elements.push_back(bindStructure(*list->getElementType(), element, parameter));
      return FrontendValue::ofList(std::move(elements));
    }
    case Kind::Dict: {
      const auto* dict = type.castRaw<c10::DictType>();
      if (dict == nullptr || dict->getKeyType()->kind() != c10::TypeKind::StringType)
        refuse("with string keys");
      std::vector<FrontendValue> elements;
      for (const ValueStructure& element : structure.elements)
        elements.push_back(bindStructure(*dict->getValueType(), element, parameter));
      return FrontendValue::ofDict(structure.keys, std::move(elements));
    }
    }
    POPSIM_ASSERT(false, "an input structure of no kind.");
  }

  ir::SourceLocation locationOf(const jit::Node& node) const {
    return userSourceLocation(node, options_.libraryPaths);
  }

  void recordUnsupported(const jit::Node& node, const std::string& reason) {
    UnsupportedOp op{node.kind().toQualString(), locationOf(node), reason, modulePathOf(node)};
    if (!op.location.known()) {
      // An op the tracer made itself (aten::Int, aten::ScalarImplicit) has no
      // line of its own: the line of the first op that reads it says where.
      if (const jit::Node* reader = firstReaderWithALine(node)) {
        op.location = locationOf(*reader);
        op.reason += strCat(op.reason.empty() ? "" : " ", "(read there by ",
                            reader->kind().toQualString(), ")");
      }
    }
    unsupported_.push_back(std::move(op));
    poisonOutputs(node);
  }

  const jit::Node* firstReaderWithALine(const jit::Node& node) const {
    for (const jit::Value* output : node.outputs()) {
      for (const jit::Use& use : output->uses()) {
        if (locationOf(*use.user).known()) return use.user;
      }
    }
    return nullptr;
  }

  void poisonOutputs(const jit::Node& node) {
    for (const jit::Value* output : node.outputs()) {
      values_[output] = FrontendValue();
    }
  }

  // Marker ops the Python side leaves in the trace. popsim.Block and friends
  // leave popsim::begin_block(user_id, ipu_id) and popsim::end_block(): ops
  // in between belong to the block. popsim.NameScope leaves
  // popsim::push_name_scope(name) and popsim::pop_name_scope(). Grad-mode
  // switches leave popsim::grad_mode(enabled). popsim.set_overlap_for_input
  // and _output leave popsim::set_overlap_for_input(x, mode) and
  // set_overlap_for_output(x, mode), which pass x through (overlaps_).
  bool importMarker(const jit::Node& node, const std::string& op) {
    if (op == "popsim::set_overlap_for_input" || op == "popsim::set_overlap_for_output") {
      const FrontendValue value = values_.at(node.inputs()[0]);
      values_[node.output()] = value;
      auto marked = overlaps_.outputs.find(node.output());
      if (marked != overlaps_.outputs.end() && value.kind == FrontendValue::Kind::Tensor) {
        overlappedOutputs_[value.tensor] = marked->second;
      }
      return true;
    }
    if (op == "popsim::grad_mode") {
      const FrontendValue& enabled = values_.at(node.inputs()[0]);
      POPSIM_ASSERT(enabled.isStatic() && enabled.constant.isBool(),
                    "popsim::grad_mode takes a constant bool.");
      gradEnabled_ = enabled.constant.toBool();
      return true;
    }
    if (op == "popsim::end_block") {
      currentBlock_.clear();
      return true;
    }
    if (op == "popsim::push_name_scope") {
      const FrontendValue& name = values_.at(node.inputs()[0]);
      POPSIM_ASSERT(name.isStatic() && name.constant.isString(),
                    "popsim::push_name_scope takes a constant string.");
      nameScope_.push_back(name.constant.toStringRef());
      return true;
    }
    if (op == "popsim::pop_name_scope") {
      POPSIM_ASSERT(!nameScope_.empty(), "popsim::pop_name_scope without a name scope open.");
      nameScope_.pop_back();
      return true;
    }
    if (op != "popsim::begin_block") {
      return false;
    }
    const FrontendValue& name = values_.at(node.inputs()[0]);
    const FrontendValue& ipu = values_.at(node.inputs()[1]);
    POPSIM_ASSERT(name.isStatic() && name.constant.isString() && ipu.isStatic() &&
                      ipu.constant.isInt(),
                  "popsim::begin_block takes a constant string and int.");
    currentBlock_ = name.constant.toStringRef();
    const int64_t ipuId = ipu.constant.toInt();
    const ir::BlockAnnotation* known = graph_->findBlock(currentBlock_);
    if (known == nullptr) {
      blockTheOpsBeforeTheFirstBlock();
      graph_->addBlock({currentBlock_, ipuId, locationOf(node)});
    } else {
      POPSIM_CHECK(ipuId < 0 || known->ipu < 0 || ipuId == known->ipu, ErrorKind::Compilation,
                   "Block '", currentBlock_, "' is placed on IPU ", known->ipu, " at ",
                   known->location.str(), " and on IPU ", ipuId, " at ", locationOf(node).str(),
                   ". A block runs on one IPU: give both the same ipu_id or use two block ids.");
    }
    return true;
  }

  // A block the options give by module path starts (ModuleBlocks).
  void enterBlock(const ModuleBlock& block, const jit::Node& node) {
    if (currentBlock_ == block.modulePath) {
      return;
    }
    currentBlock_ = block.modulePath;
    if (graph_->findBlock(block.modulePath) == nullptr) {
      blockTheOpsBeforeTheFirstBlock();
      graph_->addBlock({block.modulePath, block.ipu, locationOf(node)});
    }
  }

  // When the model enters its first block, the ops it ran before form a block
  // of their own on IPU 0, as PopTorch places the layers before the first
  // BeginBlock. (An op outside every block after a block began is refused:
  // checkEveryOpInABlock.)
  void blockTheOpsBeforeTheFirstBlock() {
    if (!graph_->blocks().empty() || !firstOpBeforeTheBlocks_) return;
    graph_->addBlock({std::string(kBeforeTheFirstBlock), 0, *firstOpBeforeTheBlocks_});
    for (const auto& node : graph_->nodes()) {
      ir::Placement placement = node->placement();
      if (!placement.block.empty()) continue;
      placement.block = kBeforeTheFirstBlock;
      node->setPlacement(placement);
    }
  }

  // Gives the IR nodes a lowering added the current block and name scope.
  // A value guard (python/popsim/frontend/value_guards.py) is traced after
  // forward() returns, outside the model's blocks: it runs in the block of
  // the output it passes on. Other ops run in the block open where they are.
  std::string blockOf(const jit::Node& node) const {
    if (!currentBlock_.empty() || std::string(node.kind().toQualString()) != "popsim::value_guard")
      return currentBlock_;
    const FrontendValue& passed = values_.at(node.input(0));
    if (passed.kind != FrontendValue::Kind::Tensor || passed.tensor->producer() == nullptr)
      return currentBlock_;
    return passed.tensor->producer()->placement().block;
  }

  void placeNewNodes(size_t firstNew, const jit::Node& node) {
    const auto& nodes = graph_->nodes();
    const std::string block = blockOf(node);
    if (nodes.size() > firstNew && block.empty()) {
      if (graph_->blocks().empty()) {
        if (!firstOpBeforeTheBlocks_) firstOpBeforeTheBlocks_ = locationOf(node);
      } else if (!firstOutsideBlock_) {
        firstOutsideBlock_ = std::string(node.kind().toQualString()) +
                             (locationOf(node).known() ? " at " + locationOf(node).str() : "");
      }
    }
    // The module path first: Python's module scopes open around each
    // submodule's call, so scopes named inside its forward() nest in them.
    std::string scope;
    if (options_.moduleScopes) {
      scope = modulePathOf(node);
      std::replace(scope.begin(), scope.end(), '.', '/');
    }
    for (const std::string& name : nameScope_)
      scope += (scope.empty() ? "" : "/") + name;
    for (size_t i = firstNew; i < nodes.size(); ++i) {
      ir::Placement placement = nodes[i]->placement();
      placement.block = block;
      nodes[i]->setPlacement(placement);
      nodes[i]->setNameScope(scope);
    }
  }

  void checkEveryOpInABlock() const {
    if (graph_->blocks().empty() || !firstOutsideBlock_) {
      return;
    }
    std::string names;
    for (const ir::BlockAnnotation& block : graph_->blocks()) {
      names += (names.empty() ? "'" : ", '") + block.name + "'";
    }
    throwError(ErrorKind::Compilation,
               "No active Block, all the ops must belong to a Block: " + *firstOutsideBlock_ +
                   " runs outside every block, but the model uses blocks (" + names +
                   "). Move it inside a `with popsim.Block(...)`, or start a block before it "
                   "with popsim.BeginBlock.");
  }

  void importNode(const jit::Node& node) {
    if (moduleBlocks_ != nullptr) { // (a branch's or a loop's nodes too)
      if (const ModuleBlock* block = moduleBlocks_->blockOf(node)) {
        enterBlock(*block, node);
      }
    }
    const std::string op = node.kind().toQualString();
    if (importMarker(node, op) || importControlFlow(node)) {
      return;
    }
    const size_t firstNew = graph_->nodes().size();
    importOp(node, op);
    placeNewNodes(firstNew, node);
  }

  // Control flow whose decisions are known when the model compiles (a module
  // flag such as self.training, a shape, a Python number), as scripted
  // models have it: the branch taken is imported, a loop unrolled, and each
  // op inside is placed as it imports. A decision that tensors compute at
  // runtime is unsupported, named with its source line.
  bool importControlFlow(const jit::Node& node) {
    if (node.kind() != c10::prim::If && node.kind() != c10::prim::Loop) {
      return false;
    }
    for (const jit::Value* input : node.inputs()) {
      if (values_.at(input).kind == FrontendValue::Kind::Poisoned) {
        poisonOutputs(node); // (the unsupported op it depends on is reported)
        return true;
      }
    }
    if (node.kind() == c10::prim::If) {
      importIf(node);
    } else {
      importLoop(node);
    }
    return true;
  }

  static constexpr const char* kRuntimeDecision =
      "its condition or trip count is computed from tensors at runtime; popsim compiles control "
      "flow that is decided when the model compiles (module flags such as self.training, "
      "shapes, Python numbers), as a traced model has it";
  // The model's loops are unrolled up to this many iterations in all (nested
  // ones counted in full) rather than making a program of that many copies.
  static constexpr int64_t kMostUnrolledIterations = 4096;

  static constexpr const char* kTensorAsNumber =
      "it turns a tensor computed at runtime into a Python number or bool (for a branch or "
      "loop a tensor decides, or an item()); popsim compiles control flow that is decided when "
      "the model compiles (module flags such as self.training, shapes, Python numbers)";

  // A tensor, or a list, tuple or optional holding one.
  static bool holdsTensor(const c10::TypePtr& type) {
    if (type->cast<c10::TensorType>() != nullptr) return true;
    for (const c10::TypePtr& contained : type->containedTypes()) {
      if (holdsTensor(contained)) return true;
    }
    return false;
  }

  // Why popsim cannot run `node` (`op`), which has no lowering: a refusal's
  // reason (LoweringRegistry::refuse), a tensor read as a number, a custom
  // autograd Function; or nothing to add.
  static std::string unsupportedReason(const jit::Node& node, const std::string& op) {
    if (const std::string* refusal = LoweringRegistry::instance().refusal(op)) return *refusal;
    if (readsTensorAsNumber(node)) return kTensorAsNumber;
    return customFunctionReason(node);
  }

  // A call into Python the trace kept (prim::PythonOp). popsim traces
  // torch.autograd.Functions itself (custom_functions.py), so one reaches
  // here only past that: a class with an `apply` of its own.
  static std::string customFunctionReason(const jit::Node& node) {
    if (node.kind() != c10::prim::PythonOp) return "";
    const std::string name = static_cast<const jit::PythonOp&>(node).name();
    return strCat("a call into the Python code of ", name,
                  ", which popsim cannot compile; a torch.autograd.Function compiles when "
                  "called through torch.autograd.Function.apply, not an apply of its own");
  }

  // aten::Bool(Tensor), aten::Int(Tensor), ...: a scripted model's tensor
  // read as a number, which only a runtime decision needs.
  static bool readsTensorAsNumber(const jit::Node& node) {
    static const std::set<std::string> kinds = {"aten::Bool", "aten::Int", "aten::Float",
                                                "aten::item", "aten::ScalarImplicit"};
    return kinds.count(node.kind().toQualString()) != 0 && node.inputs().size() == 1 &&
           node.input()->type()->cast<c10::TensorType>() != nullptr;
  }

  static std::optional<bool> decided(const FrontendValue& value) {
    if (value.isStatic() && value.constant.isBool()) return value.constant.toBool();
    return std::nullopt;
  }

  void importIf(const jit::Node& node) {
    const std::optional<bool> taken = decided(values_.at(node.input(0)));
    if (!taken) {
      recordUnsupported(node, kRuntimeDecision);
      return;
    }
    const jit::Block& branch = *node.blocks()[*taken ? 0 : 1];
    for (const jit::Node* inner : branch.nodes())
      importNode(*inner);
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      values_[node.outputs()[i]] = values_.at(branch.outputs()[i]);
      forwarded_[node.outputs()[i]] = branch.outputs()[i]; // (its memory is the branch's)
    }
  }

  // prim::Loop(trip count, condition, carried...): its body takes the
  // iteration and the carried values and gives the next condition and values.
  void importLoop(const jit::Node& node) {
    const FrontendValue& count = values_.at(node.input(0));
    std::optional<bool> going = decided(values_.at(node.input(1)));
    if (!count.isStatic() || !count.constant.isInt() || !going) {
      recordUnsupported(node, kRuntimeDecision);
      return;
    }
    const int64_t trips = count.constant.toInt(); // (values_ grows as the body imports)
    const jit::Block& body = *node.blocks()[0];
    std::vector<FrontendValue> carried;
    for (size_t i = 2; i < node.inputs().size(); ++i)
      carried.push_back(values_.at(node.inputs()[i]));
    for (int64_t trip = 0; trip < trips && *going; ++trip) {
      if (++unrolledIterations_ > kMostUnrolledIterations) {
        recordUnsupported(node, strCat("the model's loops run more than ", kMostUnrolledIterations,
                                       " iterations in all, which popsim would unroll"));
        return;
      }
      values_[body.inputs()[0]] = FrontendValue::ofStatic(trip);
      for (size_t i = 0; i < carried.size(); ++i) {
        values_[body.inputs()[i + 1]] = carried[i];
        loopCarried_.insert(body.inputs()[i + 1]);
      }
      for (const jit::Node* inner : body.nodes())
        importNode(*inner);
      going = decided(values_.at(body.outputs()[0]));
      if (!going) {
        recordUnsupported(node, kRuntimeDecision);
        return;
      }
      for (size_t i = 0; i < carried.size(); ++i)
        carried[i] = values_.at(body.outputs()[i + 1]);
    }
    for (size_t i = 0; i < carried.size(); ++i) {
      values_[node.outputs()[i]] = carried[i];
      loopCarried_.insert(node.outputs()[i]);
    }
  }

  void importOp(const jit::Node& node, const std::string& op) {
    const LoweringFn lowering = LoweringRegistry::instance().find(op);
    try {
      makeWrittenStaticTensorsRuntime(node);
    } catch (const UnsupportedLowering& error) {
      recordUnsupported(node, error.what());
      return;
    }
    bool poisoned = false;
    bool poisonedTensor = false;
    bool allStatic = true;
    for (const jit::Value* input : node.inputs()) {
      const FrontendValue& value = values_.at(input);
      const bool isPoisoned = value.kind == FrontendValue::Kind::Poisoned;
      poisoned = poisoned || isPoisoned;
      poisonedTensor = poisonedTensor || (isPoisoned && holdsTensor(input->type()));
      allStatic = allStatic && value.isStatic();
    }
    refuseMissingKey(node, op);
    if (poisoned) {
      // An op without a lowering is reported even so, so that one error lists
      // them all. Not one that only reads a number made from the reported
      // op's result (aten::Int of it, aten::arange of its size, ...): whether
      // that can run depends on the value the reported op makes, and with
      // numbers known to the trace it runs there.
      const bool pythonOp = node.kind() == c10::prim::PythonOp;
      if (lowering == nullptr && poisonedTensor && (!node.kind().is_prim() || pythonOp) &&
          !isShapeQuery(node) && !readsTensorAsNumber(node)) {
        recordUnsupported(node, unsupportedReason(node, op));
      } else {
        poisonOutputs(node);
      }
      return;
    }
    try {
      if (importPrimNode(node) || answerShapeQuery(node)) {
        return;
      }
      if (allStatic && !node.isNondeterministic() && node.maybeOperator() != nullptr &&
          evaluateStatically(node)) {
        return;
      }
      if (lowering == nullptr) {
        recordUnsupported(node, unsupportedReason(node, op));
        return;
      }
      refuseNarrowIntegerArithmetic(node);
      for (const jit::Value* input : node.inputs()) {
        aliasing_.refresh(values_.at(input), locationOf(node));
      }
      NodeContext context(node, values_, *graph_, constants_, state_, locationOf(node));
      context.unifyMixedFloats(state_.downcastMixedFloats);
      const size_t firstNode = graph_->nodes().size();
      const bool inFloat32 = context.computeHalfInFloat32();
      lowering(context);
      if (inFloat32) {
        context.restoreHalfOutputs();
        // The IPU runs the op on its float16 operands in one vertex.
        for (size_t i = firstNode; i < graph_->nodes().size(); ++i) {
          ir::Placement placement = graph_->nodes()[i]->placement();
          placement.float16OnIpu = true;
          graph_->nodes()[i]->setPlacement(placement);
        }
      }
      // (An in-place op's result is its target's view; so is a layout change's,
      // which keeps the tensor's history in eager PyTorch under no_grad() too.)
      if (!aliasing_.record(node, values_, gradEnabled_, locationOf(node)) &&
          !changesOnlyLayout(node)) {
        stopGradientsWithGradModeOff(node);
      }
    } catch (const UnsupportedLowering& error) {
      recordUnsupported(node, error.what());
    } catch (const CoreError& error) {
      if (error.kind() == ErrorKind::Internal) {
        throw; // a popsim bug, not a property of the model
      }
      // A lowering produced ops whose types do not check. When PyTorch
      // refuses the op on these operands too, the inputs do not fit the model
      // (a C++ program's example inputs, say); otherwise popsim cannot run
      // this use of the op, so report it with the others.
      if (const std::optional<std::string> refusal = eagerRefusal(node)) {
        const ir::SourceLocation location = locationOf(node);
        std::string reason = error.what();
        const std::string where = location.known() ? " (at " + location.str() + ")" : "";
        if (!where.empty() && reason.size() > where.size() &&
            reason.compare(reason.size() - where.size(), where.size(), where) == 0) {
          reason.resize(reason.size() - where.size()); // (named once, first)
        }
        throwError(ErrorKind::InvalidInput,
                   strCat(op, location.known() ? " at " + location.str() : "",
                          ": its operands do not fit it: ", reason,
                          " PyTorch refuses these operands too (", *refusal,
                          "). Check the model's inputs (", describeInputs(),
                          ") against what it expects."));
      }
      recordUnsupported(node, error.what());
    }
  }

  // What PyTorch says when it runs `node` on operands of the shapes and
  // dtypes the import gives them (tensors on the meta device, so nothing is
  // computed), or nothing when it runs, has no meta kernel, or takes
  // operands other than tensors and constants.
  std::optional<std::string> eagerRefusal(const jit::Node& node) const {
    if (node.maybeOperator() == nullptr) return std::nullopt;
    jit::Stack stack;
    for (const jit::Value* input : node.inputs()) {
      const FrontendValue& value = values_.at(input);
      if (value.isStatic() && value.constant.isTensor()) {
        stack.push_back(value.constant.toTensor().to(at::kMeta)); // (beside meta operands)
      } else if (value.isStatic()) {
        stack.push_back(value.constant);
      } else if (value.kind == FrontendValue::Kind::Tensor) {
        const ir::TensorType& type = value.tensor->type();
        stack.push_back(at::empty(std::vector<int64_t>(type.shape.begin(), type.shape.end()),
                                  at::TensorOptions(toTorchDType(type.dtype)).device(at::kMeta)));
      } else {
        return std::nullopt;
      }
    }
    try {
      node.getOperation()(stack);
    } catch (const c10::NotImplementedError&) {
      return std::nullopt; // no meta kernel: PyTorch's answer is unknown
    } catch (const c10::Error& error) {
      const std::string text = error.what_without_backtrace();
      if (text.find("meta") != std::string::npos) {
        return std::nullopt; // the meta device's limits (item(), data-dependent shapes)
      }
      return text.substr(0, text.find('\n'));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    return std::nullopt;
  }

  // "x f32[2,8,8,8], mask bool[2,8]": the graph's inputs, for errors.
  std::string describeInputs() const {
    std::string text;
    for (const ir::Value* input : graph_->inputs())
      text += (text.empty() ? "" : ", ") + input->name() + " " + input->type().str();
    return text;
  }

  // A tensor built at compile time (torch.zeros(...), a constant) is a
  // static value, evaluated once. When the model writes values computed at
  // runtime into it (pe[:, 0::2] = f(x)), its memory becomes runtime: a
  // constant with its contents so far, and each static alias of it is made
  // again from that along the view ops that made it, so that aliasing
  // carries the write to every alias, as in eager PyTorch.
  void makeWrittenStaticTensorsRuntime(const jit::Node& node) {
    // (A random in-place op, torch.empty(n).bernoulli_(p), writes values
    // drawn at runtime whatever it reads.)
    bool readsRuntimeValues = node.isNondeterministic();
    for (const jit::Value* input : node.inputs()) {
      readsRuntimeValues = readsRuntimeValues || !values_.at(input).isStatic();
    }
    if (readsRuntimeValues) {
      for (size_t written : writtenArguments(node)) {
        const FrontendValue& target = values_.at(node.inputs()[written]);
        if (target.isStatic() && target.constant.isTensor()) {
          const at::Tensor& tensor = target.constant.toTensor();
          runtimeStorages_.emplace(storageOf(tensor), tensor.storage());
        }
      }
    }
    for (const jit::Value* input : node.inputs()) {
      makeRuntimeIfWritten(input);
    }
  }

  static const void* storageOf(const at::Tensor& tensor) {
    return tensor.storage().unsafeGetStorageImpl();
  }

  void makeRuntimeIfWritten(const jit::Value* value) {
    const FrontendValue& current = values_.at(value);
    if (!current.isStatic() || !current.constant.isTensor() ||
        runtimeStorages_.count(storageOf(current.constant.toTensor())) == 0) {
      return;
    }
    // A branch's output is the value the branch taken gave; a loop-carried one
    // has no single such value, so a runtime write through it is refused.
    if (auto found = forwarded_.find(value); found != forwarded_.end()) {
      makeRuntimeIfWritten(found->second);
      values_[value] = values_.at(found->second);
      return;
    }
    if (loopCarried_.count(value) != 0) {
      throw UnsupportedLowering(
          "a write at runtime into a tensor computed at compile time and carried through a "
          "loop, which popsim unrolls: compute the tensor at runtime or write it before the "
          "loop");
    }
    const jit::Node& producer = *value->node();
    const jit::Value* base = sharedInputOf(producer, value->offset());
    if (base == nullptr) { // the tensor that owns the memory
      values_[value] = FrontendValue::ofTensor(constants_.get(current.constant.toTensor()));
      return;
    }
    makeRuntimeIfWritten(base);
    if (!writtenArguments(producer).empty()) { // an in-place op returns its target
      values_[value] = values_.at(base);
      return;
    }
    const LoweringFn lowering = LoweringRegistry::instance().find(producer.kind().toQualString());
    if (lowering == nullptr) {
      throw UnsupportedLowering(
          strCat("a write into a tensor computed at compile time and viewed through ",
                 producer.kind().toQualString(), ", which popsim cannot view at runtime"));
    }
    NodeContext context(producer, values_, *graph_, constants_, state_, locationOf(producer));
    context.unifyMixedFloats(state_.downcastMixedFloats);
    lowering(context);
    aliasing_.record(producer, values_, gradEnabled_, locationOf(producer));
  }

  // Whether a selection is given a Python number as a value (where(c, u, 5) is
  // listed under values, not here; none of the selections takes one).
  static bool hasNumberOperand(const jit::Node& node) {
    const c10::FunctionSchema* schema = node.maybeSchema();
    if (schema == nullptr) return true;
    for (const c10::Argument& argument : schema->arguments()) {
      if (argument.type()->kind() == c10::TypeKind::NumberType ||
          argument.type()->kind() == c10::TypeKind::FloatType) {
        return true;
      }
    }
    return false;
  }

  // Whether `input`, a Python number, is a compile-time constant that the
  // narrow tensor operands of `node` compare or combine with exactly: an
  // integer in their range, or (a comparison) a float.
  bool numberFitsNarrowOperands(const jit::Node& node, const jit::Value* input,
                                bool comparison) const {
    const auto found = values_.find(input);
    if (found == values_.end() || !found->second.isStatic()) return false;
    const c10::IValue& number = found->second.constant;
    if (number.isDouble()) return comparison;
    if (!number.isInt()) return false;
    const int64_t value = number.toInt();
    for (const jit::Value* operand : node.inputs()) {
      const std::optional<c10::ScalarType> scalar = narrowTypeOf(operand);
      if (!scalar.has_value()) continue;
      const bool fits = *scalar == c10::ScalarType::Byte   ? value >= 0 && value <= 255
                        : *scalar == c10::ScalarType::Char ? value >= -128 && value <= 127
                                                           : value >= -32768 && value <= 32767;
      if (!fits) return false;
    }
    return true;
  }

  // The narrow dtype a value has on the host (a buffer's read too, which a
  // trace types without its dtype), if it is one the device widens.
  std::optional<c10::ScalarType> narrowTypeOf(const jit::Value* value) const {
    const auto buffer = narrowBufferReads_.find(value);
    if (buffer != narrowBufferReads_.end()) return buffer->second.second;
    const auto type = value->type()->cast<c10::TensorType>();
    if (type == nullptr || !type->scalarType().has_value() ||
        !isWidenedOnDevice(*type->scalarType())) {
      return std::nullopt;
    }
    return *type->scalarType();
  }

  // uint8, int8 and int16 inputs arrive as int32 (the host widens them), so
  // that conversions (x.float(), x.long()) and views of them are exact; any
  // arithmetic would miss the narrow type's wrap-around, so it is refused.
  void refuseNarrowIntegerArithmetic(const jit::Node& node) const {
    const std::string op = node.kind().toQualString();
    if (op == "aten::to" || op == "aten::type_as" || op == "aten::clone" ||
        op == "aten::contiguous" || op == "aten::detach") {
      return;
    }
    // Selections: each result element is an element of a tensor operand (the other
    // arguments are dims, counts and indices, never values), so the widened values
    // are exact (a slice bounded by data is an index_select).
    static const std::set<std::string> kSelecting = {"aten::index_select",
                                                     "aten::index",
                                                     "aten::gather",
                                                     "aten::take",
                                                     "aten::take_along_dim",
                                                     "aten::masked_select",
                                                     "aten::flip",
                                                     "aten::roll",
                                                     "aten::repeat",
                                                     "aten::tile",
                                                     "aten::repeat_interleave",
                                                     "aten::cat",
                                                     "aten::stack",
                                                     "aten::tril",
                                                     "aten::triu",
                                                     "aten::diag",
                                                     "aten::max",
                                                     "aten::min",
                                                     "aten::amax",
                                                     "aten::amin",
                                                     "aten::sort",
                                                     "aten::msort",
                                                     "aten::topk",
                                                     "aten::kthvalue",
                                                     "aten::cummax",
                                                     "aten::cummin",
                                                     "aten::median",
                                                     "aten::nanmedian",
                                                     "aten::mode"};
    if (kSelecting.count(op) != 0 && !hasNumberOperand(node)) return;
    // Ops whose results are values (or comparisons) of their operands: exact on
    // the widened values, zero- or sign-extended alike, as no result leaves the
    // narrow range. A Python number operand must be a constant in the narrow
    // type's range (an integer beyond it, eager first wraps into the type; a
    // float makes eager compare in float, which widened values match).
    static const std::set<std::string> kValuePreserving = {
        "aten::bitwise_and", "aten::bitwise_or", "aten::bitwise_xor", "aten::__and__",
        "aten::__or__",      "aten::__xor__",    "aten::eq",          "aten::ne",
        "aten::lt",          "aten::le",         "aten::gt",          "aten::ge",
        "aten::maximum",     "aten::minimum",    "aten::where"};
    static const std::set<std::string> kComparisons = {"aten::eq", "aten::ne", "aten::lt",
                                                       "aten::le", "aten::gt", "aten::ge"};
    if (kValuePreserving.count(op) != 0 &&
        std::all_of(node.inputs().begin(), node.inputs().end(), [&](const jit::Value* input) {
          return input->type()->cast<c10::TensorType>() != nullptr ||
                 numberFitsNarrowOperands(node, input, kComparisons.count(op) != 0);
        })) {
      return;
    }
    // A uint8 mask is a boolean one, as eager reads it (with a deprecation
    // warning): these ops only test it against zero.
    static const std::map<std::string, size_t> kMaskArgument = {
        {"aten::masked_fill", 1}, {"aten::masked_fill_", 1}, {"aten::where", 0}};
    const auto mask = kMaskArgument.find(op);
    const c10::FunctionSchema* schema = node.maybeSchema();
    const bool view =
        changesOnlyLayout(node) || (schema != nullptr && !schema->arguments().empty() &&
                                    schema->arguments()[0].alias_info() != nullptr &&
                                    !schema->arguments()[0].alias_info()->isWrite());
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      if (mask != kMaskArgument.end() && mask->second == i) continue;
      const auto buffer = narrowBufferReads_.find(node.inputs()[i]);
      const auto type = node.inputs()[i]->type()->cast<c10::TensorType>();
      const auto scalar = buffer != narrowBufferReads_.end() ? buffer->second.second
                          : type != nullptr                  ? type->scalarType()
                                                             : c10::nullopt;
      if (view || !scalar.has_value() || !isWidenedOnDevice(*scalar)) {
        continue;
      }
      const std::string name = pythonDTypeName(*scalar).substr(std::string("torch.").size());
      const bool written = i == 0 && schema != nullptr && !schema->arguments().empty() &&
                           schema->arguments()[0].alias_info() != nullptr &&
                           schema->arguments()[0].alias_info()->isWrite();
      if (buffer != narrowBufferReads_.end()) {
        throw UnsupportedLowering(
            std::string(written ? "a write into" : "arithmetic on") + " buffer '" +
            buffer->second.first + "' (" + name +
            "); popsim holds uint8, int8 and int16 buffers as int32 and reads them only "
            "through conversions, views and comparisons, which give eager PyTorch's numbers "
            "(arithmetic would miss the narrow type's wrap-around): register the buffer as "
            "torch.int32 or torch.int64 to compute with it or update it");
      }
      throw UnsupportedLowering(
          std::string(written ? "a write into an " : "arithmetic on an ") + name +
          " tensor; popsim holds uint8, int8 and int16 inputs and buffers as int32, so it "
          "computes with "
          "them only after a conversion (x.float(), x.long(), x.int()), which gives eager "
          "PyTorch's numbers");
    }
  }

  // Values computed while the grad mode is off (torch.no_grad() and
  // friends) pass no gradient on, as in eager PyTorch.
  void stopGradientsWithGradModeOff(const jit::Node& node) {
    if (!options_.training || gradEnabled_) {
      return;
    }
    for (const jit::Value* output : node.outputs()) {
      FrontendValue& value = values_.at(output);
      if (value.kind != FrontendValue::Kind::Tensor || !ir::isFloat(value.tensor->type().dtype)) {
        continue;
      }
      value.tensor = graph_->apply(ir::OpKind::StopGradient, {value.tensor}, {}, locationOf(node));
      if (value.alias.has_value()) {
        value.alias->path.push_back({ir::OpKind::StopGradient, {}});
      }
    }
  }

  // Nodes that only build or take apart compile-time structure.
  bool importPrimNode(const jit::Node& node) {
    if (!node.inputs().empty() && values_.at(node.inputs()[0]).kind == FrontendValue::Kind::Dict &&
        importDictOp(node)) {
      return true;
    }
    switch (node.kind()) {
    case c10::prim::Constant: {
      values_[node.output()] = FrontendValue::ofStatic(
          node.output()->type()->kind() == c10::TypeKind::NoneType ? c10::IValue()
                                                                   : *jit::toIValue(node.output()));
      return true;
    }
    case c10::prim::GetAttr: importGetAttr(node); return true;
    case c10::prim::ListConstruct:
    case c10::prim::TupleConstruct: importConstruct(node); return true;
    case c10::prim::ListUnpack:
    case c10::prim::TupleUnpack: return importUnpack(node);
    case c10::prim::TupleIndex:
    case c10::aten::__getitem__: return importIndex(node);
    case c10::prim::DictConstruct: return importDictConstruct(node);
    default: return false;
    }
  }

  // A dict with runtime values (a model's dict input, or the dict it
  // returns): its keys are known when the model compiles.
  bool importDictConstruct(const jit::Node& node) {
    bool allStatic = true;
    for (const jit::Value* input : node.inputs())
      allStatic = allStatic && values_.at(input).isStatic();
    if (allStatic) {
      return false; // a constant dict, whatever its keys: PyTorch builds it (evaluateStatically)
    }
    std::vector<std::string> keys;
    std::vector<FrontendValue> elements;
    for (size_t i = 0; i + 1 < node.inputs().size(); i += 2) {
      const FrontendValue& key = values_.at(node.inputs()[i]);
      if (!key.isStatic() || !key.constant.isString()) {
        throw UnsupportedLowering("a dict with runtime values has keys that are not strings "
                                  "known when the model compiles");
      }
      keys.push_back(key.constant.toStringRef());
      elements.push_back(values_.at(node.inputs()[i + 1]));
    }
    // Python's dicts keep the last value of a repeated key, where it first stood.
    std::vector<std::string> unique;
    std::vector<FrontendValue> values;
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto seen = std::find(unique.begin(), unique.end(), keys[i]);
      if (seen != unique.end()) {
        values[static_cast<size_t>(seen - unique.begin())] = elements[i];
      } else {
        unique.push_back(keys[i]);
        values.push_back(elements[i]);
      }
    }
    values_[node.output()] = FrontendValue::ofDict(std::move(unique), std::move(values));
    return true;
  }

  // Reading a runtime dict: d[key], d.get(key[, default]), key in d, len(d),
  // d.keys(), d.values(), d.items(), all with keys known when the model
  // compiles. Writing into it is not supported (false: the op is reported).
  bool importDictOp(const jit::Node& node) {
    const FrontendValue& dict = values_.at(node.inputs()[0]);
    const std::string op = node.kind().toQualString();
    if (op == "aten::len") {
      values_[node.output()] = FrontendValue::ofStatic(static_cast<int64_t>(dict.keys.size()));
      return true;
    }
    if (op == "aten::keys") {
      c10::impl::GenericList keys(c10::StringType::get());
      for (const std::string& key : dict.keys)
        keys.push_back(key);
      values_[node.output()] = FrontendValue::ofStatic(std::move(keys));
      return true;
    }
    if (op == "aten::values") {
      values_[node.output()] = FrontendValue::ofList(dict.elements);
      return true;
    }
    if (op == "aten::items") {
      std::vector<FrontendValue> pairs;
      for (size_t i = 0; i < dict.keys.size(); ++i)
        pairs.push_back(
            FrontendValue::ofList({FrontendValue::ofStatic(dict.keys[i]), dict.elements[i]}));
      values_[node.output()] = FrontendValue::ofList(std::move(pairs));
      return true;
    }
    if (op != "aten::__getitem__" && op != "aten::get" && op != "aten::__contains__") {
      return false;
    }
    const FrontendValue& key = values_.at(node.inputs()[1]);
    if (!key.isStatic() || !key.constant.isString()) {
      throw UnsupportedLowering("a dict is read with a key that is not a string known when the "
                                "model compiles");
    }
    const auto found = std::find(dict.keys.begin(), dict.keys.end(), key.constant.toStringRef());
    const bool present = found != dict.keys.end();
    if (op == "aten::__contains__") {
      values_[node.output()] = FrontendValue::ofStatic(present);
      return true;
    }
    if (present) {
      values_[node.output()] = dict.elements[static_cast<size_t>(found - dict.keys.begin())];
      return true;
    }
    if (op == "aten::get") { // d.get(key) is None, d.get(key, default) the default
      values_[node.output()] = node.inputs().size() > 2 ? values_.at(node.inputs()[2])
                                                        : FrontendValue::ofStatic(c10::IValue());
      return true;
    }
    // (A model input's dict without the key is refused as an input before: refuseMissingKey.)
    throw UnsupportedLowering("the dict has no key '" + key.constant.toStringRef() +
                              "' (its keys: " + joinKeys(dict.keys) + ")");
  }

  // d[key] on a dict the model takes as an input, whose example has no such key: the inputs
  // do not fit the model (an InputError, not an unsupported op).
  void refuseMissingKey(const jit::Node& node, const std::string& op) const {
    if (op != "aten::__getitem__" || node.inputs().size() != 2) return;
    const jit::Value* source = node.inputs()[0];
    const FrontendValue& dict = values_.at(source);
    const FrontendValue& key = values_.at(node.inputs()[1]);
    if (dict.kind != FrontendValue::Kind::Dict || source->node()->kind() != c10::prim::Param ||
        !key.isStatic() || !key.constant.isString() ||
        std::find(dict.keys.begin(), dict.keys.end(), key.constant.toStringRef()) !=
            dict.keys.end()) {
      return;
    }
    throwError(ErrorKind::InvalidInput,
               strCat("Input '", source->debugNameBase(), "' is a dict with keys [",
                      joinKeys(dict.keys), "], but the model reads its key '",
                      key.constant.toStringRef(), "'",
                      locationOf(node).known() ? " at " + locationOf(node).str() : "",
                      ". Give the example input every key the model reads."));
  }

  static std::string joinKeys(const std::vector<std::string>& keys) {
    std::string text;
    for (const std::string& key : keys)
      text += (text.empty() ? "'" : ", '") + key + "'";
    return text;
  }

  void importGetAttr(const jit::Node& node) {
    const FrontendValue& owner = values_.at(node.input());
    POPSIM_CHECK(owner.isStatic() && owner.constant.isObject(), ErrorKind::Compilation,
                 "prim::GetAttr on a value that is not a module.");
    const auto object = owner.constant.toObject();
    const std::string name = node.s(c10::attr::name);
    const std::string path = joinPath(owner.modulePath, name);
    const size_t slot = object->type()->getAttributeSlot(name);
    const c10::IValue value = object->getSlot(slot);
    if (value.isTensor() &&
        (object->type()->is_parameter(slot) || object->type()->is_buffer(slot))) {
      const at::Tensor& tensor = value.toTensor();
      ir::Value* stored = weight(path, tensor, object->type()->is_parameter(slot));
      values_[node.output()] = aliasing_.root(stored);
      if (isWidenedOnDevice(tensor.scalar_type())) {
        narrowBufferReads_[node.output()] = {stored->name(), tensor.scalar_type()};
      }
      return;
    }
    values_[node.output()] = FrontendValue::ofStatic(value, isModuleObject(value) ? path : "");
  }

  ir::Value* weight(const std::string& path, const at::Tensor& tensor, bool parameter) {
    std::string name = path;
    const std::string prefix = options_.modelAttribute.empty() ? "" : options_.modelAttribute + ".";
    if (!prefix.empty() && startsWith(name, prefix)) {
      name = name.substr(prefix.size());
    }
    if (ir::Value* existing = graph_->findWeight(name)) {
      return existing;
    }
    const std::optional<ir::DType> dtype = !parameter && isWidenedOnDevice(tensor.scalar_type())
                                               ? ir::DType::Int32
                                               : toIrDType(tensor.scalar_type());
    if (tensor.is_complex()) {
      throw UnsupportedLowering(std::string(parameter ? "parameter '" : "buffer '") + name +
                                "' is complex (" + pythonDTypeName(tensor.scalar_type()) +
                                "), which the IPU does not compute with: keep its real and "
                                "imaginary parts (or the cos and sin of its angles) as float "
                                "tensors");
    }
    if (!dtype.has_value() || (parameter && !ir::isFloat(*dtype))) {
      throw UnsupportedLowering(std::string(parameter ? "parameter '" : "buffer '") + name +
                                "' has dtype " + pythonDTypeName(tensor.scalar_type()) +
                                (parameter ? "; popsim trains float32 and float16 parameters "
                                             "(convert the model with .float() or .half())"
                                           : "; popsim computes with float16, float32, int32, "
                                             "int64 and bool tensors (and reads uint8, int8 and "
                                             "int16 ones as int32): convert it to one"));
    }
    return graph_->addWeight(
        name, {*dtype, ir::Shape(tensor.sizes().begin(), tensor.sizes().end())}, parameter);
  }

  void importConstruct(const jit::Node& node) {
    std::vector<FrontendValue> elements;
    bool allStatic = true;
    for (const jit::Value* input : node.inputs()) {
      elements.push_back(values_.at(input));
      allStatic = allStatic && elements.back().isStatic();
    }
    if (!allStatic) {
      values_[node.output()] = FrontendValue::ofList(std::move(elements));
      return;
    }
    std::vector<c10::IValue> items;
    for (const FrontendValue& element : elements) {
      items.push_back(element.constant);
    }
    if (node.kind() == c10::prim::TupleConstruct) {
      values_[node.output()] =
          FrontendValue::ofStatic(c10::ivalue::Tuple::create(std::move(items)));
      return;
    }
    const c10::TypePtr elementType =
        node.output()->type()->expectRef<c10::ListType>().getElementType();
    c10::impl::GenericList list(elementType);
    for (c10::IValue& item : items) {
      list.push_back(std::move(item));
    }
    values_[node.output()] = FrontendValue::ofStatic(std::move(list));
  }

  // The elements of a list or tuple value, static or not.
  static std::vector<FrontendValue> elementsOf(const FrontendValue& source) {
    if (source.kind == FrontendValue::Kind::List) {
      return source.elements;
    }
    std::vector<FrontendValue> elements;
    if (source.isStatic() && (source.constant.isTuple() || source.constant.isList())) {
      const std::vector<c10::IValue> items = source.constant.isTuple()
                                                 ? source.constant.toTupleRef().elements().vec()
                                                 : source.constant.toListRef().vec();
      for (const c10::IValue& item : items) {
        elements.push_back(FrontendValue::ofStatic(item));
      }
    }
    return elements;
  }

  bool importUnpack(const jit::Node& node) {
    const std::vector<FrontendValue> elements = elementsOf(values_.at(node.input()));
    POPSIM_CHECK(elements.size() == node.outputs().size(), ErrorKind::Compilation, "unpacking ",
                 elements.size(), " values into ", node.outputs().size(), ".");
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      values_[node.outputs()[i]] = elements[i];
    }
    return true;
  }

  bool importIndex(const jit::Node& node) {
    const FrontendValue& source = values_.at(node.inputs()[0]);
    const FrontendValue& index = values_.at(node.inputs()[1]);
    const bool sequence =
        source.kind == FrontendValue::Kind::List ||
        (source.isStatic() && (source.constant.isTuple() || source.constant.isList()));
    if (!sequence || !index.isStatic() || !index.constant.isInt()) {
      return false;
    }
    const std::vector<FrontendValue> elements = elementsOf(source);
    int64_t i = index.constant.toInt();
    const int64_t size = static_cast<int64_t>(elements.size());
    if (i < 0) i += size;
    POPSIM_CHECK(i >= 0 && i < size, ErrorKind::Compilation, "list index ", index.constant.toInt(),
                 " out of range for ", size, " elements.");
    values_[node.output()] = elements[static_cast<size_t>(i)];
    return true;
  }

  static bool isShapeQuery(const jit::Node& node) {
    const c10::Symbol kind = node.kind();
    return kind == c10::aten::size || kind == c10::aten::dim ||
           kind == c10::Symbol::fromQualString("aten::numel") || kind == c10::prim::dtype ||
           kind == c10::prim::device || kind == c10::aten::len ||
           kind == c10::Symbol::fromQualString("aten::_shape_as_tensor");
  }

  // Sizes, rank, dtype and device of runtime tensors are known statically.
  bool answerShapeQuery(const jit::Node& node) {
    if (!isShapeQuery(node) || node.inputs().empty()) {
      return false;
    }
    const FrontendValue& source = values_.at(node.inputs()[0]);
    if (node.kind() == c10::aten::len && source.kind == FrontendValue::Kind::List) {
      values_[node.output()] =
          FrontendValue::ofStatic(static_cast<int64_t>(source.elements.size()));
      return true;
    }
    if (source.kind != FrontendValue::Kind::Tensor) {
      return false;
    }
    const ir::TensorType& type = source.tensor->type();
    c10::IValue result;
    if (node.kind() == c10::aten::size) {
      if (node.inputs().size() == 1) {
        result = c10::IValue(std::vector<int64_t>(type.shape.begin(), type.shape.end()));
      } else {
        const FrontendValue& dim = values_.at(node.inputs()[1]);
        POPSIM_CHECK(dim.isStatic(), ErrorKind::Compilation, "size() with a runtime dimension.");
        int64_t d = dim.constant.toInt();
        if (d < 0) d += type.rank();
        POPSIM_CHECK(d >= 0 && d < type.rank(), ErrorKind::Compilation, "size(",
                     dim.constant.toInt(), ") of a tensor of rank ", type.rank(), ".");
        result = type.shape[static_cast<size_t>(d)];
      }
    } else if (node.kind() == c10::aten::dim) {
      result = type.rank();
    } else if (node.kind() == c10::Symbol::fromQualString("aten::numel")) {
      result = type.numel();
    } else if (node.kind() == c10::prim::dtype) {
      result = static_cast<int64_t>(toTorchDType(type.dtype));
    } else if (node.kind() == c10::prim::device) {
      result = c10::Device(c10::DeviceType::CPU);
    } else if (node.kind() == c10::Symbol::fromQualString("aten::_shape_as_tensor")) {
      // The shape as an int64 tensor (torchvision's detection models read it
      // so while traced): known when compiling, as the sizes are.
      result = at::tensor(std::vector<int64_t>(type.shape.begin(), type.shape.end()), at::kLong);
    } else {
      return false;
    }
    values_[node.output()] = FrontendValue::ofStatic(std::move(result));
    return true;
  }

  // Runs the op with PyTorch on compile-time inputs; false if it cannot.
  bool evaluateStatically(const jit::Node& node) {
    jit::Stack stack;
    for (const jit::Value* input : node.inputs()) {
      stack.push_back(values_.at(input).constant);
    }
    // A layout change (t.unsqueeze_(0)) runs on an alias of the tensor's
    // memory, so that the value before it keeps its own sizes and strides.
    if (changesOnlyLayout(node) && !stack.empty() && stack[0].isTensor()) {
      stack[0] = stack[0].toTensor().alias();
    }
    try {
      node.getOperation()(stack);
    } catch (const std::exception&) {
      return false;
    }
    if (stack.size() != node.outputs().size()) {
      return false;
    }
    // empty, empty_like, new_empty, empty_strided: PyTorch leaves the contents
    // undefined; popsim's are zeros, so that a program repeats its results.
    const std::string name = node.kind().toQualString();
    const bool undefinedContents = name.rfind("aten::empty", 0) == 0 || name == "aten::new_empty";
    for (size_t i = 0; i < stack.size(); ++i) {
      if (undefinedContents && stack[i].isTensor()) stack[i].toTensor().zero_();
      values_[node.outputs()[i]] = FrontendValue::ofStatic(std::move(stack[i]));
    }
    return true;
  }

  // A graph output as the model returns it: views read again after in-place
  // writes, in the block of the model's last op (stages keep their order).
  FrontendValue currentValue(const jit::Value* output) {
    const auto& nodes = graph_->nodes();
    const size_t firstNew = nodes.size();
    FrontendValue value;
    try {
      makeRuntimeIfWritten(output);
      value = values_.at(output);
      aliasing_.refresh(value, {});
    } catch (const UnsupportedLowering& error) {
      throwError(ErrorKind::Unsupported,
                 strCat("popsim cannot compute a tensor the model returns: ", error.what(), "."));
    }
    for (size_t i = firstNew; i < nodes.size(); ++i) {
      ir::Placement placement = nodes[i]->placement();
      placement.block = firstNew > 0 ? nodes[firstNew - 1]->placement().block : currentBlock_;
      nodes[i]->setPlacement(placement);
    }
    return value;
  }

  // The graph outputs a model's output is (its tensors, depth-first), and
  // how it nests them; `type` is TorchScript's, which tells tuples from lists.
  ValueStructure addOutputs(const FrontendValue& value, const c10::Type& type) {
    using Kind = ValueStructure::Kind;
    ValueStructure structure;
    switch (value.kind) {
    case FrontendValue::Kind::Tensor: graph_->addOutput(value.tensor); return structure;
    case FrontendValue::Kind::List:
    case FrontendValue::Kind::Dict: {
      structure.kind = value.kind == FrontendValue::Kind::Dict  ? Kind::Dict
                       : type.kind() == c10::TypeKind::ListType ? Kind::List
                                                                : Kind::Tuple;
      structure.keys = value.keys;
      for (size_t i = 0; i < value.elements.size(); ++i)
        structure.elements.push_back(addOutputs(value.elements[i], elementType(type, i)));
      return structure;
    }
    case FrontendValue::Kind::Static:
      if (value.constant.isTensor()) {
        graph_->addOutput(constants_.get(value.constant.toTensor()));
        return structure;
      }
      if (value.constant.isTuple() || value.constant.isList()) {
        structure.kind = value.constant.isList() ? Kind::List : Kind::Tuple;
        const std::vector<FrontendValue> elements = elementsOf(value);
        for (size_t i = 0; i < elements.size(); ++i)
          structure.elements.push_back(addOutputs(elements[i], elementType(type, i)));
        return structure;
      }
      if (value.constant.isGenericDict() && type.kind() == c10::TypeKind::DictType &&
          type.expectRef<c10::DictType>().getKeyType()->kind() == c10::TypeKind::StringType) {
        structure.kind = Kind::Dict;
        for (const auto& entry : value.constant.toGenericDict()) {
          structure.keys.push_back(entry.key().toStringRef());
          structure.elements.push_back(addOutputs(FrontendValue::ofStatic(entry.value()),
                                                  *type.expectRef<c10::DictType>().getValueType()));
        }
        return structure;
      }
      throwError(ErrorKind::Compilation,
                 std::string("the model returns a ") + value.constant.tagKind() +
                     "; popsim models return tensors, or tuples, lists and dicts (string keys) "
                     "of tensors.");
    case FrontendValue::Kind::Poisoned: break;
    }
    POPSIM_ASSERT(false, "a model output depends on an unsupported op.");
  }

  // The type of a container's i-th element (a traced graph's outputs may be
  // typed loosely: then any type).
  static const c10::Type& elementType(const c10::Type& type, size_t i) {
    if (const auto* tuple = type.castRaw<c10::TupleType>()) {
      if (i < tuple->elements().size()) return *tuple->elements()[i];
    }
    if (const auto* list = type.castRaw<c10::ListType>()) return *list->getElementType();
    if (const auto* dict = type.castRaw<c10::DictType>()) return *dict->getValueType();
    return *c10::AnyType::get();
  }

  void reportUnsupported() const {
    if (!unsupported_.empty()) {
      throwError(ErrorKind::Unsupported, unsupportedOpsMessage(unsupported_));
    }
  }

  const jit::Module& self_;
  // The C++ API's blocks by module path, while the graph imports.
  const ModuleBlocks* moduleBlocks_ = nullptr;
  // A scripted model's prim::If outputs -> the branch output each is, and the
  // values a prim::Loop carries (control flow decided at compile time).
  std::unordered_map<const jit::Value*, const jit::Value*> forwarded_;
  std::set<const jit::Value*> loopCarried_;
  // Reads of uint8, int8 and int16 buffers (held as int32) -> the buffer's name
  // and dtype: a trace types prim::GetAttr's output without its dtype.
  std::map<const jit::Value*, std::pair<std::string, c10::ScalarType>> narrowBufferReads_;
  int64_t unrolledIterations_ = 0;
  const std::vector<ir::TensorType>& inputTypes_;
  const ImportOptions& options_;
  ValueStructure* outputStructure_ = nullptr; // given by the caller, filled by run()
  std::unique_ptr<ir::Graph> graph_;
  std::string currentBlock_;
  std::vector<std::string> nameScope_; // popsim.NameScope names, outermost first
  bool gradEnabled_ = true;
  // Memory of compile-time tensors that the model writes at runtime, each
  // kept alive here: a freed storage's address could be reused by a later
  // compile-time tensor (a size computed as a tensor), which would then pass
  // for runtime memory and stop folding (swin_t's shape arithmetic after a
  // stochastic depth's random mask).
  std::unordered_map<const void*, c10::Storage> runtimeStorages_;
  std::optional<std::string> firstOutsideBlock_; // "aten::add at m.py:3"
  // Where the first op the model runs before it enters any block is.
  std::optional<ir::SourceLocation> firstOpBeforeTheBlocks_;
  OverlapMarks overlaps_;
  std::map<const ir::Value*, ir::HostOverlap> overlappedOutputs_; // by the value returned

  ConstantTensors constants_;
  Aliasing aliasing_;
  ValueMap values_;
  ImportState state_;
  std::vector<UnsupportedOp> unsupported_;
};

} // namespace

std::unique_ptr<ir::Graph> importGraph(const std::shared_ptr<torch::jit::Graph>& graph,
                                       const torch::jit::Module& self,
                                       const std::vector<ir::TensorType>& inputTypes,
                                       const ImportOptions& options,
                                       ValueStructure* outputStructure) {
  return GraphImporter(self, inputTypes, options).run(graph, outputStructure);
}

std::unique_ptr<ir::Graph> importModule(const torch::jit::Module& module,
                                        const std::vector<ir::TensorType>& inputTypes,
                                        const ImportOptions& options,
                                        ValueStructure* outputStructure) {
  return importGraph(module.get_method("forward").graph(), module, inputTypes, options,
                     outputStructure);
}

} // namespace popsim::frontend
