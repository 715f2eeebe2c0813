#include "frontend/loss_identification.h"

#include "common/check.h"

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
  std::vector<const ir::Value*> seen;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const ir::Value* output = graph.outputs()[i];
    if (dependencies.markedSource(output) != nullptr &&
        std::find(seen.begin(), seen.end(), output) == seen.end()) {
      outputs.push_back(i);
      seen.push_back(output);
    }
  }
  POPSIM_CHECK(!outputs.empty(), ErrorKind::Compilation,
               "The training model returns no loss. Its forward() must return the loss, or "
               "(output, loss), computed with a PyTorch loss function (e.g. "
               "torch.nn.CrossEntropyLoss) or marked with popsim.identity_loss(x, reduction).");
  if (outputs.size() > 1) {
    std::string list;
    for (size_t i : outputs) {
      list += strCat(list.empty() ? "" : ", ", "output ", i, " (from ",
                     describeLoss(*dependencies.markedSource(graph.outputs()[i])), ")");
    }
    throwError(ErrorKind::Compilation,
               strCat("The training model returns several independent losses: ", list,
                      ". popsim minimises a single loss: combine them, e.g. "
                      "popsim.identity_loss(loss1 + loss2, reduction=\"none\"), and return that as "
                      "the loss (other outputs may still return the parts)."));
  }
  ir::Value* loss = graph.outputs()[outputs.front()];
  POPSIM_CHECK(loss->type().rank() == 0 && loss->type().dtype == ir::DType::Float32,
               ErrorKind::Compilation, "The loss (output ", outputs.front(), ") is a ",
               loss->type().str(),
               " tensor, but a loss must be a float scalar: reduce it (a loss "
               "function's reduction=\"mean\" or \"sum\") or use popsim.identity_loss(x, "
               "reduction=\"mean\").");
  graph.setLoss(loss);
}

} // namespace popsim::frontend
