#include "memory/streaming_plan.h"

#include "ir/op_schema.h"

namespace popsim::memory {

std::vector<StreamedBytes> streamedBytesPerNode(const ir::Graph& graph, const MemoryPlan& plan,
                                                const std::set<const ir::Value*>& offChip,
                                                const IoTileRoutes& routes) {
  std::vector<StreamedBytes> perNode;
  for (const auto& node : graph.nodes()) {
    std::set<const ir::Value*> read;
    std::set<const ir::Value*> written;
    for (const ir::Value* input : node->inputs()) {
      const ir::Value* root = plan.storageRoot(input);
      if (offChip.count(root) != 0) read.insert(root);
    }
    for (size_t index : node->schema().mutatedInputs) {
      if (index >= node->inputs().size()) continue; // an optional input left out
      const ir::Value* root = plan.storageRoot(node->input(index));
      if (offChip.count(root) != 0) written.insert(root);
    }
    const auto bytes = [&](const std::set<const ir::Value*>& roots,
                           const std::set<const ir::Value*>* only = nullptr) {
      uint64_t sum = 0;
      for (const ir::Value* root : roots) {
        if (only == nullptr || only->count(root) != 0) sum += plan.footprint(root);
      }
      return sum;
    };
    StreamedBytes streamed;
    streamed.in = bytes(read);
    streamed.out = bytes(written);
    streamed.ioTileIn = bytes(read, &routes.loads);
    streamed.ioTileOut = bytes(written, &routes.stores);
    read.insert(written.begin(), written.end());
    streamed.working = bytes(read);
    perNode.push_back(streamed);
  }
  return perNode;
}

} // namespace popsim::memory
