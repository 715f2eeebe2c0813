#include "compiler/training/weight_sharding.h"

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"
#include "ir/op_schema.h"
#include "ir/replica_shard.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace popsim::compiler {
namespace {

// A gather of a stored shard: the ops that read a sharded weight read this.
bool gathersWeight(const ir::Node& node) {
  return node.kind() == ir::OpKind::ReplicaAllGather &&
         node.input(0)->role() == ir::ValueRole::Weight;
}

// A sharded weight's readers read a gathered copy, so a write to the weight
// in the forward pass (weight clipping under torch.no_grad()) would be lost.
void checkNotWritten(const ir::Value& weight, const std::vector<ir::Node*>& readers) {
  for (const ir::Node* reader : readers) {
    for (size_t index : reader->schema().mutatedInputs) {
      POPSIM_CHECK_OPTION(
          reader->input(index) != &weight, "TensorLocations.setWeightLocation",
          "replicated tensor sharding of weights (TensorLocations.setWeightLocation): ",
          reader->describe(), " writes the weight '", weight.name(),
          "' in the forward pass, but each replica stores only a shard of it. Raise "
          "minElementsForReplicatedTensorSharding above its ",
          weight.type().numel(), " elements, or turn the sharding off.");
    }
  }
}

// Orders nodes by their place in the graph (a node's users are listed in the
// order the uses were made, which passes that insert nodes change). Nodes
// inserted after it was made are not among the ones it orders here.
class GraphOrder {
public:
  explicit GraphOrder(const ir::Graph& graph) {
    for (size_t i = 0; i < graph.nodes().size(); ++i)
      position_[graph.nodes()[i].get()] = i;
  }
  std::vector<ir::Node*> sorted(std::vector<ir::Node*> nodes) const {
    std::sort(nodes.begin(), nodes.end(), [&](const ir::Node* a, const ir::Node* b) {
      return position_.at(a) < position_.at(b);
    });
    return nodes;
  }

private:
  std::unordered_map<const ir::Node*, size_t> position_;
};

} // namespace

std::unordered_map<const ir::Value*, ir::Value*> shardWeights(ir::Graph& graph,
                                                              const TrainingConfig& config) {
  std::unordered_map<const ir::Value*, ir::Value*> gathered;
  if (config.replicas < 2 || config.shardedWeights.empty()) return gathered;
  const GraphOrder order(graph); // the gathers added below read no other weight
  for (const std::string& name : config.shardedWeights) {
    ir::Value* weight = graph.findWeight(name);
    if (weight == nullptr || weight->users().empty()) continue; // the forward pass never reads it
    const std::vector<ir::Node*> readers =
        order.sorted({weight->users().begin(), weight->users().end()});
    checkNotWritten(*weight, readers);
    const ir::TensorType whole = weight->type();
    ir::Value* shard = graph.replaceWeight(weight, ir::replicaShardType(whole, config.replicas));
    graph.setInsertionPoint(readers.front()); // just before the first reader
    ir::Attributes attrs = training::collectiveAttrs(config, name + "/gather");
    attrs.set("shape", whole.shape);
    ir::Node* gather = graph.addNode(ir::OpKind::ReplicaAllGather, {shard}, std::move(attrs));
    gather->setPlacement(readers.front()->placement().forAddedOp());
    graph.setInsertionPoint(nullptr);
    for (ir::Node* reader : readers) {
      for (size_t i = 0; i < reader->inputs().size(); ++i) {
        if (reader->input(i) == weight) graph.replaceInput(reader, i, gather->output());
      }
    }
    gathered[shard] = gather->output();
  }
  return gathered;
}

ir::Value* gatheredWeight(const ir::Value& weight) {
  for (const ir::Node* user : weight.users()) {
    if (gathersWeight(*user) && user->attrs().getString("key") == weight.name() + "/gather") {
      return user->output();
    }
  }
  return nullptr;
}

bool gatherShardedWeightsPerTask(ir::Graph& graph, const TaskLayout& layout) {
  bool changed = false;
  std::vector<ir::Node*> gathers;
  for (const auto& node : graph.nodes()) {
    if (gathersWeight(*node)) gathers.push_back(node.get());
  }
  const GraphOrder order(graph); // the gathers added below read no gather
  for (ir::Node* gather : gathers) {
    const size_t home = layout.taskOf(*gather);
    // The readers in other tasks, by task, in graph order.
    std::map<size_t, std::vector<ir::Node*>> elsewhere;
    const std::vector<ir::Node*> readers =
        order.sorted({gather->output()->users().begin(), gather->output()->users().end()});
    for (ir::Node* reader : readers) {
      const size_t task = layout.taskOf(*reader);
      if (task != home) elsewhere[task].push_back(reader);
    }
    for (const auto& [task, taskReaders] : elsewhere) {
      graph.setInsertionPoint(taskReaders.front());
      ir::Attributes attrs = gather->attrs();
      attrs.set("key", attrs.getString("key") + "@" + layout.tasks()[task].name());
      ir::Node* again = graph.addNode(ir::OpKind::ReplicaAllGather, {gather->input(0)},
                                      std::move(attrs), gather->location());
      again->setPlacement(taskReaders.front()->placement().forAddedOp());
      changed = true;
      for (ir::Node* reader : taskReaders) {
        for (size_t i = 0; i < reader->inputs().size(); ++i) {
          if (reader->input(i) == gather->output()) graph.replaceInput(reader, i, again->output());
        }
      }
    }
    graph.setInsertionPoint(nullptr);
  }
  return changed;
}

std::unique_ptr<Pass> createWeightShardingPass() {
  return std::make_unique<FunctionPass>("weight-sharding",
                                        [](ir::Graph& graph, PassContext& context) {
                                          return !shardWeights(graph, context.training()).empty();
                                        });
}

std::unique_ptr<Pass> createWeightGathersPass() {
  return std::make_unique<FunctionPass>(
      "weight-gathers", [](ir::Graph& graph, PassContext& context) {
        return gatherShardedWeightsPerTask(graph, context.layout(graph));
      });
}

} // namespace popsim::compiler
