#include "frontend/module_blocks.h"

#include "common/check.h"

#include <torch/csrc/jit/ir/scope.h>

#include <functional>
#include <set>

namespace popsim::frontend {
namespace jit = torch::jit;

std::string modulePathOf(const jit::Node& node) {
  std::string path;
  const c10::optional<jit::InlinedCallStackPtr> stack = node.callstack();
  if (!stack.has_value()) {
    return path;
  }
  // Outermost call first; a call on `self` itself (instance name "SELF") or
  // on an object the inliner could not name adds nothing.
  for (const jit::InlinedCallStackEntry& entry : (*stack)->vec()) {
    const c10::optional<jit::ModuleInstanceInfo>& module = std::get<2>(entry);
    if (!module.has_value()) {
      continue;
    }
    const std::string name = module->instance_name();
    if (name.empty() || name == "SELF" || name == "INSTANCE_NAME_UNKNOWN") {
      continue;
    }
    path += (path.empty() ? "" : ".") + name;
  }
  return path;
}

namespace {

bool isWithin(const std::string& path, const std::string& module) {
  return path == module ||
         (path.size() > module.size() && path.compare(0, module.size(), module) == 0 &&
          path[module.size()] == '.');
}

} // namespace

ModuleBlocks::ModuleBlocks(std::vector<ModuleBlock> blocks, const jit::Graph& graph,
                           const jit::Module& self)
    : blocks_(std::move(blocks)) {
  if (blocks_.empty()) {
    return;
  }
  std::set<std::string> modules;
  std::string names;
  for (const jit::NameModule& named : self.named_modules()) {
    if (named.name.empty()) continue;
    modules.insert(named.name);
    if (named.name.find('.') == std::string::npos) {
      names += (names.empty() ? "" : ", ") + named.name;
    }
  }
  std::set<std::string> entered;
  // Nodes in order, those of a scripted model's branches and loop bodies too,
  // where a module may run.
  std::function<void(const jit::Block&)> visit = [&](const jit::Block& body) {
    for (const jit::Node* node : body.nodes()) {
      if (const ModuleBlock* block = blockOf(*node)) {
        if (first_ == nullptr) first_ = block;
        entered.insert(block->modulePath);
      }
      for (const jit::Block* inner : node->blocks())
        visit(*inner);
    }
  };
  visit(*graph.block());
  for (const ModuleBlock& block : blocks_) {
    POPSIM_CHECK_OPTION(
        modules.count(block.modulePath) > 0, "setExecutionStrategy",
        "The execution strategy places module '", block.modulePath,
        "', but the model has no module of that path (its top-level modules: ", names,
        "). Give modules as named_modules() names them, e.g. \"layer1\" or "
        "\"encoder.layer.0\".");
    POPSIM_CHECK_OPTION(
        entered.count(block.modulePath) > 0, "setExecutionStrategy",
        "The execution strategy places module '", block.modulePath,
        "', but forward() runs no op of it, so its block would be empty. Remove it or "
        "name a module forward() calls.");
  }
}

const ModuleBlock* ModuleBlocks::blockOf(const jit::Node& node) const {
  const std::string path = modulePathOf(node);
  if (path.empty()) {
    return nullptr;
  }
  // The innermost listed module holding the node: a listed submodule of a
  // listed module starts a block of its own.
  const ModuleBlock* found = nullptr;
  for (const ModuleBlock& block : blocks_) {
    if (isWithin(path, block.modulePath) &&
        (found == nullptr || block.modulePath.size() > found->modulePath.size())) {
      found = &block;
    }
  }
  return found;
}

} // namespace popsim::frontend
