#include "frontend/aliasing.h"

#include "common/check.h"

#include <ATen/TensorUtils.h>

#include <algorithm>
#include <unordered_set>

namespace popsim::frontend {
namespace {

namespace jit = torch::jit;

using AliasSets = std::unordered_set<c10::Symbol>;

// The alias sets an argument or return is in, including its elements' (Tensor(a)[]).
void collectSets(const c10::AliasInfo* info, AliasSets& sets) {
  if (info == nullptr) {
    return;
  }
  sets.insert(info->beforeSets().begin(), info->beforeSets().end());
  for (const c10::AliasInfo& contained : info->containedTypes()) {
    collectSets(&contained, sets);
  }
}

AliasSets setsOf(const c10::Argument& argument) {
  AliasSets sets;
  collectSets(argument.alias_info(), sets);
  return sets;
}

bool shareASet(const AliasSets& a, const AliasSets& b) {
  for (const c10::Symbol& set : a) {
    if (b.count(set) != 0) return true;
  }
  return false;
}

bool writes(const c10::Argument& argument) {
  return argument.alias_info() != nullptr && argument.alias_info()->isWrite();
}

// Whether an op that may return a view (its schema says Tensor(a)) returned
// one in eager PyTorch, which the traced sizes and strides tell.
bool returnedAView(const jit::Node& node) {
  const std::string op = node.kind().toUnqualString();
  const auto in = node.inputs()[0]->type()->cast<c10::TensorType>();
  const auto out = node.output()->type()->cast<c10::TensorType>();
  if (in == nullptr || out == nullptr) {
    return true;
  }
  const auto inSizes = in->sizes().concrete_sizes();
  const auto inStrides = in->strides().concrete_sizes();
  const auto outSizes = out->sizes().concrete_sizes();
  const auto outStrides = out->strides().concrete_sizes();
  // to() and contiguous() return their input itself, or a copy: with another
  // dtype, with copy=True, or in another memory format (other strides).
  const bool sameStrides = !inStrides || !outStrides || *inStrides == *outStrides;
  if (op == "to" || op == "type_as") {
    const auto copy = node.get<bool>(c10::Symbol::attr("copy"));
    return in->scalarType() == out->scalarType() && !(copy.has_value() && *copy) && sameStrides;
  }
  if (op == "contiguous") {
    return sameStrides;
  }
  if (!inSizes || !inStrides || !outSizes) {
    return true;
  }
  if (op == "reshape" || op == "reshape_as" || op == "flatten" || op == "ravel") {
    return at::detail::computeStride(*inSizes, *inStrides, *outSizes).has_value();
  }
  return true;
}

} // namespace

// Their schema marks self as written, but no element changes, so they are
// recorded as views.
bool changesOnlyLayout(const jit::Node& node) {
  static const std::unordered_set<std::string> ops = {"aten::transpose_", "aten::swapaxes_",
                                                      "aten::swapdims_",  "aten::t_",
                                                      "aten::squeeze_",   "aten::unsqueeze_"};
  return ops.count(node.kind().toQualString()) != 0;
}

const jit::Value* sharedInputOf(const jit::Node& node, size_t index) {
  const c10::FunctionSchema* schema = node.maybeSchema();
  if (schema == nullptr || schema->arguments().empty() || node.inputs().empty() ||
      index >= schema->returns().size()) {
    return nullptr;
  }
  const AliasSets first = setsOf(schema->arguments()[0]);
  const c10::Argument& result = schema->returns()[index];
  if (first.empty() || !shareASet(first, setsOf(result))) {
    return nullptr;
  }
  return writes(schema->arguments()[0]) || returnedAView(node) ? node.inputs()[0] : nullptr;
}

std::vector<size_t> writtenArguments(const jit::Node& node) {
  std::vector<size_t> written;
  const c10::FunctionSchema* schema = node.maybeSchema();
  if (schema == nullptr || changesOnlyLayout(node)) {
    return written;
  }
  const size_t count = std::min(schema->arguments().size(), node.inputs().size());
  for (size_t i = 0; i < count; ++i) {
    if (writes(schema->arguments()[i])) written.push_back(i);
  }
  return written;
}

FrontendValue Aliasing::root(ir::Value* value) {
  std::shared_ptr<Storage>& storage = roots_[value];
  if (storage == nullptr) {
    storage = std::make_shared<Storage>(Storage{value, 0, value});
  }
  FrontendValue result = FrontendValue::ofTensor(storage->contents);
  result.alias = Alias{storage, {}, "", storage->version};
  return result;
}

void Aliasing::refresh(FrontendValue& value, const ir::SourceLocation& location) {
  if (value.kind == FrontendValue::Kind::List || value.kind == FrontendValue::Kind::Dict) {
    for (FrontendValue& element : value.elements) {
      refresh(element, location);
    }
    return;
  }
  if (value.kind != FrontendValue::Kind::Tensor || !value.alias.has_value() ||
      value.alias->version == value.alias->storage->version) {
    return;
  }
  Alias& alias = *value.alias;
  if (!alias.opaqueView.empty()) {
    throw UnsupportedLowering(
        strCat("a view made by ", alias.opaqueView,
               " is read after the tensor it views was modified in place, and popsim cannot "
               "recompute that view; take the view after the in-place op, or make the in-place "
               "op out of place"));
  }
  value.tensor = readView(graph_, alias.storage->contents, alias.path, location);
  alias.version = alias.storage->version;
}

bool Aliasing::record(const jit::Node& node, ValueMap& values, bool gradEnabled,
                      const ir::SourceLocation& location) {
  const c10::FunctionSchema* schema = node.maybeSchema();
  if (schema == nullptr) {
    return false;
  }
  const std::string op = node.kind().toQualString();
  const auto& arguments = schema->arguments();
  const auto& returns = schema->returns();
  const size_t numArguments = std::min(arguments.size(), node.inputs().size());
  const size_t numReturns = std::min(returns.size(), node.outputs().size());
  const bool layoutOnly = changesOnlyLayout(node);
  bool wrote = false;
  for (size_t i = 0; i < numArguments; ++i) {
    if (layoutOnly || !writes(arguments[i])) continue;
    wrote = true;
    refuseOverlappingReads(op, node, values, i);
    for (size_t j = 0; j < numReturns; ++j) {
      if (writes(returns[j]) && shareASet(setsOf(arguments[i]), setsOf(returns[j]))) {
        write(op, values.at(node.inputs()[i]), values.at(node.outputs()[j]), gradEnabled, location);
      }
    }
  }
  if (wrote || numArguments == 0 || node.inputs().empty()) {
    return wrote;
  }
  if (layoutOnly) {
    refuseLayoutChangeOfRoot(op, values.at(node.inputs()[0]), values.at(node.outputs()[0]));
  }
  const AliasSets viewed = setsOf(arguments[0]);
  for (size_t j = 0; j < numReturns; ++j) {
    if (!viewed.empty() && shareASet(viewed, setsOf(returns[j])) && returnedAView(node)) {
      view(op, values.at(node.inputs()[0]), values.at(node.outputs()[j]));
    }
  }
  return false;
}

void Aliasing::refuseOverlappingReads(const std::string& op, const jit::Node& node,
                                      const ValueMap& values, size_t written) const {
  const FrontendValue& target = values.at(node.inputs()[written]);
  if (target.kind != FrontendValue::Kind::Tensor || !target.alias.has_value() ||
      !target.alias->opaqueView.empty()) {
    return;
  }
  const Alias& writes = *target.alias;
  for (size_t k = 0; k < node.inputs().size(); ++k) {
    const FrontendValue& input = values.at(node.inputs()[k]);
    if (k == written || input.kind != FrontendValue::Kind::Tensor || !input.alias.has_value() ||
        input.alias->storage != writes.storage) {
      continue;
    }
    if (!input.alias->opaqueView.empty() ||
        readsWhatItOverwrites(writes.storage->contents->type().shape, writes.path,
                              input.alias->path)) {
      throw UnsupportedLowering(strCat(
          "an in-place ", op,
          " that reads elements of the tensor it writes at other positions "
          "(as x[:, 1:] += x[:, :-1] does); eager PyTorch's result then depends on the order "
          "its kernel visits the elements. Read from a copy: x[:, 1:] += x[:, :-1].clone()"));
    }
  }
}

void Aliasing::refuseLayoutChangeOfRoot(const std::string& op, const FrontendValue& target,
                                        const FrontendValue& result) const {
  if (target.kind != FrontendValue::Kind::Tensor || !target.alias.has_value() ||
      (result.kind == FrontendValue::Kind::Tensor && result.tensor == target.tensor)) {
    return; // (x.t_() of a vector, x.squeeze_() without dims of size 1: nothing changes)
  }
  const Alias& alias = *target.alias;
  const ir::Value* root = alias.storage->root;
  if (root == nullptr || !alias.path.empty() || !alias.opaqueView.empty()) {
    return; // an intermediate tensor, or a view of an input: only the trace sees the change
  }
  const bool input =
      std::find(graph_.inputs().begin(), graph_.inputs().end(), root) != graph_.inputs().end();
  // "aten::unsqueeze_" -> "unsqueeze", the op that makes the view out of place.
  const std::string outOfPlace = op.substr(op.find("::") + 2, op.size() - op.find("::") - 3);
  throw UnsupportedLowering(
      strCat("an in-place ", op, " that changes the shape of ",
             input ? "model input " : "weight or buffer ", root->name(),
             " itself: eager PyTorch leaves the caller's tensor with the new shape after the "
             "call, which popsim does not do; take a new view instead (x = x.",
             outOfPlace, "(...))"));
}

void Aliasing::view(const std::string& op, FrontendValue& base, FrontendValue& result) const {
  if (base.kind != FrontendValue::Kind::Tensor) {
    return;
  }
  if (result.kind == FrontendValue::Kind::List) { // split, chunk, unbind
    for (FrontendValue& element : result.elements) {
      view(op, base, element);
    }
    return;
  }
  if (result.kind != FrontendValue::Kind::Tensor) {
    return;
  }
  if (!base.alias.has_value()) {
    base.alias = Alias{std::make_shared<Storage>(Storage{base.tensor, 0, nullptr}), {}, "", 0};
  }
  Alias alias = *base.alias;
  const std::optional<ViewPath> path = findViewPath(base.tensor, result.tensor);
  if (path.has_value() && alias.opaqueView.empty()) {
    alias.path.insert(alias.path.end(), path->begin(), path->end());
  } else if (alias.opaqueView.empty()) {
    alias.opaqueView = op;
  }
  result.alias = std::move(alias);
}

void Aliasing::write(const std::string& op, const FrontendValue& target, FrontendValue& result,
                     bool tracked, const ir::SourceLocation& location) {
  if (target.isStatic() && result.kind == FrontendValue::Kind::Tensor) {
    // The importer makes written compile-time tensors runtime first; never
    // drop a write.
    throw UnsupportedLowering(
        strCat("an in-place ", op, " of runtime values into a tensor computed at compile time"));
  }
  if (target.kind != FrontendValue::Kind::Tensor || result.kind != FrontendValue::Kind::Tensor) {
    return;
  }
  if (result.tensor == target.tensor) { // the op left the values as they were
    result.alias = target.alias;
    return;
  }
  const bool untracked = !tracked && training_ && ir::isFloat(target.tensor->type().dtype);
  if (!target.alias.has_value()) {
    // Nothing else views the target: the result simply is its new value (one
    // autograd does not see, if the write is untracked).
    if (untracked) {
      ir::Value* stopped = graph_.apply(ir::OpKind::StopGradient, {result.tensor}, {}, location);
      result.tensor = graph_.apply(ir::OpKind::Overwrite, {target.tensor, stopped}, {}, location);
    }
    return;
  }
  const Alias& alias = *target.alias;
  if (!(result.tensor->type() == target.tensor->type())) {
    throw UnsupportedLowering(strCat("an in-place ", op, " whose result ",
                                     result.tensor->type().str(), " differs from the tensor ",
                                     target.tensor->type().str(), " it writes"));
  }
  if (!alias.opaqueView.empty()) {
    throw UnsupportedLowering(strCat("an in-place write into a view made by ", alias.opaqueView,
                                     ", which popsim cannot carry back to the tensor it views; "
                                     "compute the result out of place"));
  }
  Storage& storage = *alias.storage;
  for (const ViewStep& step : alias.path) {
    tracked = tracked && step.kind != ir::OpKind::StopGradient;
  }
  if (tracked || !training_ || !ir::isFloat(storage.contents->type().dtype)) {
    storage.contents = writeView(graph_, storage.contents, alias.path, result.tensor, location);
  } else {
    // Autograd does not see the write: the new values pass no gradient, and
    // the storage's gradient flows to its old contents (overwrite).
    auto stop = [&](ir::Value* value) {
      return graph_.apply(ir::OpKind::StopGradient, {value}, {}, location);
    };
    ir::Value* written =
        writeView(graph_, stop(storage.contents), alias.path, stop(result.tensor), location);
    storage.contents =
        graph_.apply(ir::OpKind::Overwrite, {storage.contents, written}, {}, location);
    result.tensor = readView(graph_, storage.contents, alias.path, location);
  }
  ++storage.version;
  if (storage.root != nullptr && storage.root->isVariable()) {
    // A buffer updated in place keeps its new value for the next call.
    graph_.addNode(ir::OpKind::Assign, {storage.root, storage.contents}, {}, location);
  }
  result.alias = Alias{alias.storage, alias.path, "", storage.version};
}

std::vector<std::pair<size_t, ir::Value*>> Aliasing::writtenInputs() const {
  std::vector<std::pair<size_t, ir::Value*>> written;
  for (size_t i = 0; i < graph_.inputs().size(); ++i) {
    auto it = roots_.find(graph_.inputs()[i]);
    if (it != roots_.end() && it->second->version > 0) {
      written.emplace_back(i, it->second->contents);
    }
  }
  return written;
}

} // namespace popsim::frontend
