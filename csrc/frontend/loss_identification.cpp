#include "frontend/loss_identification.h"

#include "common/check.h"
#include "common/logging.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace popsim::frontend {
namespace {

// The marked value `value` depends on (itself included), or null.
class Dependencies {
public:
  explicit Dependencies(std::unordered_set<const ir::Value*> marked) : marked_(std::move(marked)) {}

  const ir::Value* markedSource(const ir::Value* value) {
    auto known = memo_.find(value);
    if (known != memo_.end()) return known->second;
    const ir::Value* source = nullptr;
    if (marked_.count(value) != 0) {
      source = value;
    } else if (value->producer() != nullptr) {
      for (const ir::Value* input : value->producer()->inputs()) {
        source = markedSource(input);
        if (source != nullptr) break;
      }
    }
    memo_[value] = source;
    return source;
  }

private:
  std::unordered_set<const ir::Value*> marked_;
  std::unordered_map<const ir::Value*, const ir::Value*> memo_;
};

std::string describeLoss(const ir::Value& loss) {
  const ir::Node* producer = loss.producer();
  return producer == nullptr ? std::string("a loss") : producer->describe();
}

// Every value `value` is computed from, itself included.
std::unordered_set<const ir::Value*> ancestorsOf(const ir::Value* value) {
  std::unordered_set<const ir::Value*> seen{value};
  std::vector<const ir::Value*> pending{value};
  while (!pending.empty()) {
    const ir::Value* current = pending.back();
    pending.pop_back();
    if (current->producer() == nullptr) continue;
    for (const ir::Value* input : current->producer()->inputs()) {
      if (seen.insert(input).second) pending.push_back(input);
    }
  }
  return seen;
}

// The position of the node producing `value` in the graph (-1 for leaves).
std::ptrdiff_t producerPosition(const ir::Graph& graph, const ir::Value* value) {
  const auto& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].get() == value->producer()) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

} // namespace

void identifyLoss(ir::Graph& graph, const MarkedLosses& losses) {
  const bool identity = std::any_of(losses.begin(), losses.end(), [](const auto& loss) {
    return loss.second == LoweringContext::LossKind::Identity;
  });
  std::unordered_set<const ir::Value*> marked;
  for (const auto& [value, kind] : losses) {
    if (!identity || kind == LoweringContext::LossKind::Identity) marked.insert(value);
  }
  Dependencies dependencies(marked);
  std::vector<size_t> outputs; // one index per distinct loss value
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const ir::Value* output = graph.outputs()[i];
    const bool repeated = std::any_of(outputs.begin(), outputs.end(), [&](size_t earlier) {
      return graph.outputs()[earlier] == output;
    });
    if (dependencies.markedSource(output) != nullptr && !repeated) outputs.push_back(i);
  }
  POPSIM_CHECK(!outputs.empty(), ErrorKind::Compilation,
               "Couldn't find a loss in graph: the training model returns no loss. Its "
               "forward() must return the loss, or "
               "(output, loss), computed with a PyTorch loss function (e.g. "
               "torch.nn.CrossEntropyLoss) or marked with popsim.identity_loss(x, reduction).");
  // A loss returned next to a total computed from it (`return a + b, a`) is a
  // part shown to the user, as PopTorch's non-final losses: only the losses
  // no other returned loss is computed from are minimised.
  std::vector<std::unordered_set<const ir::Value*>> ancestors;
  for (size_t i : outputs)
    ancestors.push_back(ancestorsOf(graph.outputs()[i]));
  if (identity) {
    // A returned PyTorch loss computed apart from the marked ones is not
    // minimised: say so rather than leave it silently untrained.
    std::unordered_set<const ir::Value*> builtin;
    for (const auto& [value, kind] : losses) {
      if (kind == LoweringContext::LossKind::Builtin) builtin.insert(value);
    }
    Dependencies builtinDependencies(std::move(builtin));
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const ir::Value* output = graph.outputs()[i];
      const ir::Value* source = builtinDependencies.markedSource(output);
      const bool partOfAMarkedLoss =
          std::any_of(ancestors.begin(), ancestors.end(),
                      [&](const std::unordered_set<const ir::Value*>& computedFrom) {
                        return computedFrom.count(output) != 0;
                      });
      if (source == nullptr || dependencies.markedSource(output) != nullptr || partOfAMarkedLoss)
        continue;
      POPSIM_LOG(Warn) << "The training model returns a loss that is not minimised: output " << i
                       << " is a PyTorch loss function's result (" << describeLoss(*source)
                       << "), but the model marks its losses with popsim.identity_loss, and "
                          "then only the marked ones are minimised. Mark this one with "
                          "identity_loss too (or add it into a marked loss) to train on it.";
    }
  }
  std::vector<size_t> finals;
  for (size_t a = 0; a < outputs.size(); ++a) {
    const ir::Value* output = graph.outputs()[outputs[a]];
    bool part = false;
    for (size_t b = 0; b < outputs.size() && !part; ++b) {
      part = b != a && ancestors[b].count(output) != 0;
    }
    if (!part) finals.push_back(outputs[a]);
  }
  for (size_t i : finals) {
    const ir::Value* loss = graph.outputs()[i];
    POPSIM_CHECK(loss->type().rank() == 0 && ir::isFloat(loss->type().dtype),
                 ErrorKind::Compilation, "The loss (output ", i, ", from ",
                 describeLoss(*dependencies.markedSource(loss)), ") is a ", loss->type().str(),
                 " tensor, but a loss must be a float scalar: reduce it (a loss "
                 "function's reduction=\"mean\" or \"sum\") or use popsim.identity_loss(x, "
                 "reduction=\"mean\").");
  }
  // Several independent losses: the model minimises their sum (each is still
  // returned as it is), computed where the last of them is.
  ir::Value* loss = graph.outputs()[finals.front()];
  const ir::Value* last = loss;
  for (size_t k = 1; k < finals.size(); ++k) {
    ir::Value* next = graph.outputs()[finals[k]];
    if (producerPosition(graph, next) > producerPosition(graph, last)) last = next;
  }
  for (size_t k = 1; k < finals.size(); ++k) {
    ir::Node* sum = graph.addNode(ir::OpKind::Add, {loss, graph.outputs()[finals[k]]}, {},
                                  last->producer() != nullptr ? last->producer()->location()
                                                              : ir::SourceLocation{});
    if (last->producer() != nullptr) sum->setPlacement(last->producer()->placement().forAddedOp());
    loss = sum->output(0);
  }
  graph.setLoss(loss);
}

} // namespace popsim::frontend
