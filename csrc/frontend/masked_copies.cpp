#include "frontend/masked_copies.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <optional>
#include <vector>

namespace popsim::frontend {
namespace {

namespace jit = torch::jit;

std::string kindOf(const jit::Node* node) { return node->kind().toQualString(); }

std::optional<std::vector<int64_t>> sizesOf(const jit::Value* value) {
  const auto type = value->type()->cast<c10::TensorType>();
  if (type == nullptr) return std::nullopt;
  const auto sizes = type->sizes().concrete_sizes();
  if (!sizes) return std::nullopt;
  return *sizes;
}

std::optional<at::ScalarType> dtypeOf(const jit::Value* value) {
  const auto type = value->type()->cast<c10::TensorType>();
  if (type == nullptr || !type->scalarType()) return std::nullopt;
  return *type->scalarType();
}

// The one tensor of an indices list (prim::ListConstruct of one value).
jit::Value* onlyIndex(const jit::Value* indices) {
  const jit::Node* list = indices->node();
  if (kindOf(list) != "prim::ListConstruct" || list->inputs().size() != 1) return nullptr;
  return list->input(0);
}

bool isFalseConstant(const jit::Value* value) {
  const std::optional<c10::IValue> constant = jit::toIValue(value);
  return constant.has_value() && constant->isBool() && !constant->toBool();
}

// Whether a node between `first` and `last` (of one block) writes in place, so
// that src read at `first` might differ from src read at `last`.
bool writesBetween(const jit::Node* first, const jit::Node* last) {
  if (first->owningBlock() != last->owningBlock()) return true;
  for (const jit::Node* node = first->next(); node != last; node = node->next()) {
    if (node->kind() == c10::prim::Return || !node->blocks().empty()) return true;
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (schema == nullptr) continue; // prim::ListConstruct, prim::Constant: no writes
    for (const c10::Argument& argument : schema->arguments()) {
      if (argument.alias_info() != nullptr && argument.alias_info()->isWrite()) return true;
    }
  }
  return false;
}

// index_put(_)(out, [mask], src[mask], false) as described in the header, or
// nothing when the node is not of that form.
void rewrite(jit::Graph& graph, jit::Node* put) {
  jit::Value* out = put->input(0);
  jit::Value* mask = onlyIndex(put->input(1));
  jit::Value* selection = put->input(2);
  // Where the trace's mask selected one element (or row), Tensor.__setitem__
  // dropped the selection's leading 1: a view in between.
  jit::Node* dropped = nullptr;
  if (kindOf(selection->node()) == "aten::view" && selection->uses().size() == 1) {
    dropped = selection->node();
    selection = dropped->input(0);
  }
  jit::Node* index = selection->node();
  if (mask == nullptr || !isFalseConstant(put->input(3)) || kindOf(index) != "aten::index" ||
      selection->uses().size() != 1 || onlyIndex(index->input(1)) != mask ||
      writesBetween(index, put)) {
    return;
  }
  jit::Value* src = index->input(0);
  const auto outSizes = sizesOf(out);
  const auto maskSizes = sizesOf(mask);
  if (!outSizes || !maskSizes || sizesOf(src) != outSizes || dtypeOf(mask) != at::kBool ||
      dtypeOf(src) != dtypeOf(out) || maskSizes->size() > outSizes->size() ||
      !std::equal(maskSizes->begin(), maskSizes->end(), outSizes->begin())) {
    return;
  }
  jit::WithInsertPoint insertBefore(put);
  jit::WithCurrentScope sameScope(graph, put->scope());
  jit::Value* condition = mask;
  for (size_t rank = maskSizes->size(); rank < outSizes->size(); ++rank) {
    condition = graph.insert(c10::aten::unsqueeze, {condition, -1}, {}, put->sourceRange());
  }
  jit::Value* merged =
      graph.insert(c10::aten::where, {condition, src, out}, {}, put->sourceRange());
  // The traced type, through LibTorch's copyMetadata (see tensor_bound_slices.cpp).
  merged->copyMetadata(put->output());
  jit::Value* result = merged;
  if (kindOf(put) == "aten::index_put_") {
    result = graph.insert(c10::aten::copy_, {out, merged, false}, {}, put->sourceRange());
    result->copyMetadata(put->output());
  }
  put->output()->replaceAllUsesWith(result);
  put->destroy();
  if (dropped != nullptr) dropped->destroy();
  index->destroy();
}

} // namespace

void rewriteMaskedCopies(jit::Graph& graph) {
  std::vector<jit::Node*> puts;
  std::function<void(jit::Block*)> collect = [&](jit::Block* block) {
    for (jit::Node* node : block->nodes()) {
      const std::string kind = kindOf(node);
      if ((kind == "aten::index_put_" || kind == "aten::index_put") && node->inputs().size() == 4) {
        puts.push_back(node);
      }
      for (jit::Block* inner : node->blocks())
        collect(inner);
    }
  };
  collect(graph.block());
  for (jit::Node* put : puts) {
    rewrite(graph, put);
  }
}

} // namespace popsim::frontend
