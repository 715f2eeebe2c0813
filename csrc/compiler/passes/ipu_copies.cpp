#include "compiler/passes/ipu_copies.h"

#include "common/check.h"
#include "compiler/passes.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace popsim::compiler {
namespace {

// Users of `value` grouped by IPU, each group in graph order.
std::map<int64_t, std::vector<ir::Node*>>
usersByIpu(const ir::Value& value, const std::unordered_map<const ir::Node*, size_t>& position) {
  std::vector<ir::Node*> users(value.users().begin(), value.users().end());
  std::sort(users.begin(), users.end(),
            [&](const ir::Node* a, const ir::Node* b) { return position.at(a) < position.at(b); });
  std::map<int64_t, std::vector<ir::Node*>> groups;
  for (ir::Node* user : users) {
    std::vector<ir::Node*>& group = groups[user->placement().ipu];
    if (group.empty() || group.back() != user) group.push_back(user);
  }
  return groups;
}

void replaceUses(ir::Graph& graph, const std::vector<ir::Node*>& users, ir::Value* from,
                 ir::Value* to) {
  for (ir::Node* user : users) {
    for (size_t i = 0; i < user->inputs().size(); ++i) {
      if (user->input(i) == from) graph.replaceInput(user, i, to);
    }
  }
}

} // namespace

bool readOnlyBuffer(const ir::Value& weight) {
  if (weight.role() != ir::ValueRole::Weight || weight.trainable()) return false;
  return std::none_of(weight.users().begin(), weight.users().end(), [](const ir::Node* user) {
    return ir::opFamily(user->kind()) == ir::OpFamily::Update;
  });
}

void insertIpuCopies(ir::Graph& graph) {
  std::unordered_map<const ir::Node*, size_t> position;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    position[graph.nodes()[i].get()] = i;
  }
  // Constants: one per IPU.
  const std::vector<ir::Value*> constants = graph.constants();
  for (ir::Value* constant : constants) {
    auto groups = usersByIpu(*constant, position);
    bool first = true;
    for (auto& [ipu, users] : groups) {
      if (first) {
        first = false;
        continue;
      }
      ir::Value* twin =
          graph.addConstant(constant->type(), constant->constantData(), constant->name());
      replaceUses(graph, users, constant, twin);
    }
  }
  // Computed values, inputs and read-only buffers: copies to the other IPUs that use them.
  std::vector<ir::Value*> sources(graph.inputs().begin(), graph.inputs().end());
  for (ir::Value* weight : graph.weights()) {
    if (readOnlyBuffer(*weight)) sources.push_back(weight);
  }
  for (const auto& node : graph.nodes()) {
    for (ir::Value* output : node->outputs())
      sources.push_back(output);
  }
  for (ir::Value* source : sources) {
    auto groups = usersByIpu(*source, position);
    if (groups.empty()) continue;
    if (source->producer() != nullptr) {
      groups.erase(source->producer()->placement().ipu);
    } else {
      // An input (or read-only buffer) lives on the IPU that uses it first in the program.
      const ir::Node* first = nullptr;
      for (const auto& [ipu, users] : groups) {
        if (first == nullptr || position.at(users.front()) < position.at(first)) {
          first = users.front();
        }
      }
      groups.erase(first->placement().ipu);
    }
    for (auto& [ipu, users] : groups) {
      ir::Node* firstUser = users.front();
      graph.setInsertionPoint(firstUser);
      ir::Node* copy = graph.addNode(ir::OpKind::IpuCopy, {source}, {}, firstUser->location());
      graph.setInsertionPoint(nullptr);
      copy->setPlacement(firstUser->placement().forAddedOp());
      replaceUses(graph, users, source, copy->output());
    }
  }
}

std::unique_ptr<Pass> createIpuCopiesPass() {
  return std::make_unique<FunctionPass>("ipu-copies", [](ir::Graph& graph, PassContext&) {
    const size_t before = graph.nodes().size() + graph.constants().size();
    insertIpuCopies(graph);
    return graph.nodes().size() + graph.constants().size() != before;
  });
}

} // namespace popsim::compiler
