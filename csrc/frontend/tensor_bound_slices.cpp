#include "frontend/tensor_bound_slices.h"

#include "common/check.h"
#include "frontend/source_location.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <optional>
#include <set>

namespace popsim::frontend {
namespace {

namespace jit = torch::jit;

constexpr const char* kConstantSize =
    "The size of the sliced tensor must be a constant for each execution of the model when "
    "running on the IPU.";

// A slice bound as a tensor the model computes plus a constant.
struct Bound {
  jit::Value* root = nullptr;
  int64_t offset = 0;
};

std::optional<int64_t> constantInt(const jit::Value* value) {
  const std::optional<c10::IValue> constant = jit::toIValue(value);
  if (!constant) return std::nullopt;
  if (constant->isInt()) return constant->toInt();
  if (constant->isTensor()) {
    const at::Tensor& tensor = constant->toTensor();
    if (tensor.numel() == 1 && c10::isIntegralType(tensor.scalar_type(), /*includeBool=*/false)) {
      return tensor.item<int64_t>();
    }
  }
  return std::nullopt;
}

bool isIntegerTensor(const jit::Value* value) {
  const auto type = value->type()->cast<c10::TensorType>();
  return type != nullptr && type->scalarType().has_value() &&
         c10::isIntegralType(*type->scalarType(), /*includeBool=*/false);
}

bool isFloatTensor(const jit::Value* value) {
  const auto type = value->type()->cast<c10::TensorType>();
  return type != nullptr && type->scalarType().has_value() &&
         c10::isFloatingType(*type->scalarType());
}

std::string kindOf(const jit::Node* node) { return node->kind().toQualString(); }

// The tensor an int bound reads, when the trace took it from one (aten::Int).
jit::Value* tensorRead(const jit::Value* bound) {
  const jit::Node* producer = bound->node();
  if (kindOf(producer) != "aten::Int" || producer->inputs().size() != 1) return nullptr;
  jit::Value* tensor = producer->input(0);
  return tensor->type()->cast<c10::TensorType>() != nullptr ? tensor : nullptr;
}

// Whether a value depends on the model's data (its inputs, parameters and
// buffers) rather than only on shapes and constants, which the importer folds.
bool dependsOnData(const jit::Value* value, std::set<const jit::Value*>& seen) {
  if (!seen.insert(value).second) return false;
  const jit::Node* producer = value->node();
  const std::string kind = kindOf(producer);
  if (kind == "prim::Param") return value->type()->cast<c10::TensorType>() != nullptr;
  if (kind == "prim::GetAttr") return value->type()->cast<c10::TensorType>() != nullptr;
  if (kind == "prim::Constant" || kind == "aten::size" || kind == "aten::dim" ||
      kind == "aten::numel" || kind == "prim::device" || kind == "prim::dtype") {
    return false; // metadata of a tensor, known when the model compiles
  }
  for (const jit::Value* input : producer->inputs()) {
    if (dependsOnData(input, seen)) return true;
  }
  return false;
}

// Follows a bound's tensor back through additions and subtractions of
// integer constants and integer conversions to the tensor they start from.
Bound boundOf(jit::Value* tensor) {
  Bound bound{tensor, 0};
  while (true) {
    const jit::Node* producer = bound.root->node();
    const std::string kind = kindOf(producer);
    if ((kind == "aten::add" || kind == "aten::sub") && producer->inputs().size() == 3 &&
        isIntegerTensor(producer->input(0)) && isIntegerTensor(producer->output())) {
      const std::optional<int64_t> constant = constantInt(producer->input(1));
      const std::optional<int64_t> alpha = constantInt(producer->input(2));
      if (constant && alpha) {
        bound.offset += (kind == "aten::add" ? 1 : -1) * *constant * *alpha;
        bound.root = producer->input(0);
        continue;
      }
    }
    if ((kind == "aten::to" || kind == "aten::clone" || kind == "aten::detach" ||
         kind == "aten::contiguous") &&
        isIntegerTensor(producer->input(0)) && isIntegerTensor(producer->output())) {
      bound.root = producer->input(0);
      continue;
    }
    return bound;
  }
}

// Whether a float entered a bound's computation before it became an integer.
bool convertedFromFloat(const jit::Value* root) {
  const jit::Node* producer = root->node();
  return kindOf(producer) == "aten::to" && isFloatTensor(producer->input(0));
}

// Whether something writes into `value` or a view of it.
bool writtenThrough(const jit::Value* value) {
  for (const jit::Use& use : value->uses()) {
    const c10::FunctionSchema* schema = use.user->maybeSchema();
    if (schema == nullptr || use.offset >= schema->arguments().size()) continue;
    const c10::AliasInfo* alias = schema->arguments()[use.offset].alias_info();
    if (alias == nullptr) continue;
    if (alias->isWrite()) return true;
    for (const jit::Value* view : use.user->outputs()) {
      if (writtenThrough(view)) return true;
    }
  }
  return false;
}

// Replaces `view` (a slice or narrow of input 0 along the constant dim in
// input 1) by index_select of start + [0, step, 2 step, ...] below size, as
// dynamic_slice takes them; the index_select checks the range at run time.
void replaceWithIndexSelect(jit::Graph& graph, jit::Node* view, jit::Value* startTensor,
                            int64_t size, int64_t step, const std::string& where) {
  POPSIM_CHECK(!writtenThrough(view->output()), ErrorKind::Compilation, "The slice at ", where,
               " has bounds computed from a tensor at runtime and is written into; popsim reads "
               "such a slice as a copy (an index_select), so the write would be lost. Use "
               "popsim.dynamic_update(t, src, dim, start, size) to write it.");
  const auto startType = startTensor->type()->cast<c10::TensorType>();
  const std::optional<int64_t> startElements =
      startType->sizes().concrete_sizes()
          ? std::optional<int64_t>(c10::multiply_integers(*startType->sizes().concrete_sizes()))
          : std::nullopt;
  POPSIM_CHECK(!startElements.has_value() || *startElements == 1, ErrorKind::Compilation,
               "The slice at ", where, " has a start of ", startElements.value_or(0),
               " elements; a slice bound read from a tensor takes a one-element tensor.");
  jit::WithInsertPoint insertBefore(view);
  jit::WithCurrentScope sameScope(graph, view->scope());
  const at::Tensor offsets = at::arange(0, size, step, at::kLong);
  jit::Value* steps = graph.insertConstant(offsets, view->sourceRange(), view->scope());
  jit::Value* positions =
      graph.insert(c10::aten::add, {steps, startTensor}, {}, view->sourceRange());
  jit::Value* taken =
      graph.insert(c10::aten::index_select, {view->input(0), view->input(1), positions}, {},
                   view->sourceRange());
  // The traced type, through LibTorch's copyMetadata: the inline setType would
  // need c10::DynamicType's typeinfo under UBSan, which LibTorch does not export.
  taken->copyMetadata(view->output());
  view->output()->replaceAllUsesWith(taken);
  view->destroy();
}

void rewriteSlice(jit::Graph& graph, jit::Node* slice,
                  const std::vector<std::string>& libraryPaths) {
  jit::Value* startTensor = tensorRead(slice->input(2));
  jit::Value* endTensor = tensorRead(slice->input(3));
  std::set<const jit::Value*> seenStart;
  std::set<const jit::Value*> seenEnd;
  const bool startData = startTensor != nullptr && dependsOnData(startTensor, seenStart);
  const bool endData = endTensor != nullptr && dependsOnData(endTensor, seenEnd);
  if (!startData && !endData) return;
  const std::string where = userSourceLocation(*slice, libraryPaths).str();
  const std::string fix =
      " Write the slice as t[e + a : e + b] with one tensor e and constants a and b, or use "
      "popsim.dynamic_slice(t, dim, start, size, step).";
  POPSIM_CHECK(startData && endData, ErrorKind::Compilation, kConstantSize, " The slice at ", where,
               " has its ", startData ? "start" : "end",
               " computed from a tensor at runtime and its ", startData ? "end" : "start",
               " from constants or shapes, so its length would change with the data.", fix);
  const Bound start = boundOf(startTensor);
  const Bound end = boundOf(endTensor);
  if (start.root != end.root) {
    const bool fromFloat = convertedFromFloat(start.root) || convertedFromFloat(end.root);
    POPSIM_CHECK(false, ErrorKind::Compilation, kConstantSize,
                 fromFloat ? " In this case, there is a float added to the slice indices meaning "
                             "it may change between runs."
                           : "",
                 " The slice at ", where,
                 " has bounds computed from different tensors, so its length would change with "
                 "the data.",
                 fix);
  }
  const int64_t size = end.offset - start.offset;
  POPSIM_CHECK(size != 0, ErrorKind::Compilation,
               "The start and end of a slice must be different. The slice at ", where,
               " has the same tensor as its start and end, so it is always empty.");
  POPSIM_CHECK(size > 0, ErrorKind::Compilation,
               "Taking a slice of a tensor with the end less than the start is not supported. "
               "The slice at ",
               where, " ends ", -size, " before it starts.");
  const std::optional<int64_t> step = constantInt(slice->input(4));
  POPSIM_CHECK(step.has_value() && *step >= 1, ErrorKind::Compilation, "The slice at ", where,
               " has a step computed at runtime or below 1; popsim compiles a constant step of "
               "at least 1.");
  replaceWithIndexSelect(graph, slice, startTensor, size, *step, where);
}

// narrow(self, dim, start, length) with start a tensor of the model's data
// (or an int read from one): a slice of constant length.
void rewriteNarrow(jit::Graph& graph, jit::Node* narrow,
                   const std::vector<std::string>& libraryPaths) {
  jit::Value* start = narrow->input(2);
  jit::Value* startTensor =
      start->type()->cast<c10::TensorType>() != nullptr ? start : tensorRead(start);
  std::set<const jit::Value*> seen;
  if (startTensor == nullptr || !dependsOnData(startTensor, seen)) return;
  const std::optional<int64_t> length = constantInt(narrow->input(3));
  if (!length.has_value()) return; // the importer reports a length computed at runtime
  const std::string where = userSourceLocation(*narrow, libraryPaths).str();
  POPSIM_CHECK(*length >= 1, ErrorKind::Compilation, "The narrow at ", where, " has length ",
               *length,
               "; a narrow whose start is computed from a tensor takes a length of at "
               "least 1.");
  replaceWithIndexSelect(graph, narrow, startTensor, *length, 1, where);
}

} // namespace

void rewriteTensorBoundSlices(jit::Graph& graph, const std::vector<std::string>& libraryPaths) {
  std::vector<jit::Node*> views;
  std::function<void(jit::Block*)> collect = [&](jit::Block* block) {
    for (jit::Node* node : block->nodes()) {
      const std::string kind = kindOf(node);
      if ((kind == "aten::slice" && node->inputs().size() == 5) ||
          (kind == "aten::narrow" && node->inputs().size() == 4)) {
        views.push_back(node);
      }
      for (jit::Block* inner : node->blocks())
        collect(inner);
    }
  };
  collect(graph.block());
  for (jit::Node* view : views) {
    if (kindOf(view) == "aten::slice") {
      rewriteSlice(graph, view, libraryPaths);
    } else {
      rewriteNarrow(graph, view, libraryPaths);
    }
  }
}

} // namespace popsim::frontend
