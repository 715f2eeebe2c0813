#include "memory/memory_report.h"

#include "common/check.h"
#include "ir/op_schema.h"
#include "ir/printer.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace popsim::memory {
namespace {

// Code bytes of the nodes on one IPU: a vertex type per distinct op signature
// (kind and input types) and control code per node, on every tile.
uint64_t codeBytes(const ir::Graph& graph, int64_t ipu, const device::ChipSpec& chip) {
  std::set<std::string> signatures;
  uint64_t nodes = 0;
  for (const auto& node : graph.nodes()) {
    if (node->placement().ipu != ipu || ir::isFreeOnIpu(*node)) {
      continue;
    }
    std::string signature(node->name());
    for (const ir::Value* input : node->inputs()) {
      signature += " " + input->type().str();
    }
    signatures.insert(signature);
    ++nodes;
  }
  const uint64_t tiles = static_cast<uint64_t>(chip.tiles);
  return signatures.size() * kVertexCodeBytesPerTile * tiles +
         nodes * kControlCodeBytesPerTile * tiles;
}

} // namespace

std::string describeValue(const ir::Value& value) {
  switch (value.role()) {
  case ir::ValueRole::Weight: return value.name() + (value.trainable() ? " (weight)" : " (buffer)");
  case ir::ValueRole::State:
    return value.name() + " (" + ir::stateKindName(value.stateKind()) + " state)";
  case ir::ValueRole::Input: return "input '" + value.name() + "'";
  case ir::ValueRole::Constant: return "a constant";
  case ir::ValueRole::Computed:
    return value.producer() != nullptr ? "output of " + value.producer()->describe() : "a value";
  }
  return "a value";
}

uint64_t IpuMemoryReport::offChip() const {
  uint64_t sum = 0;
  for (const MemoryCategory& category : streamingMemory) {
    sum += category.bytes;
  }
  return sum;
}

uint64_t IpuMemoryReport::total() const { return alwaysLive() + notAlwaysLive(); }

uint64_t IpuMemoryReport::alwaysLive() const {
  uint64_t sum = 0;
  for (const MemoryCategory& category : categories) {
    sum += category.alwaysLive ? category.bytes : 0;
  }
  return sum;
}

uint64_t IpuMemoryReport::notAlwaysLive() const {
  uint64_t sum = 0;
  for (const MemoryCategory& category : categories) {
    sum += category.alwaysLive ? 0 : category.bytes;
  }
  return sum;
}

MemoryReport buildMemoryReport(const ir::Graph& graph, const MemoryPlan& plan,
                               const device::IpuSystemConfig& system,
                               const RuntimeBuffers& buffers) {
  const auto bytesOn = [](const std::vector<uint64_t>& perIpu, size_t ipu) {
    return ipu < perIpu.size() ? perIpu[ipu] : 0;
  };
  MemoryReport report;
  report.chip = system.chipFigures().name;
  for (size_t ipu = 0; ipu < plan.ipus().size(); ++ipu) {
    const IpuMemoryLayout& layout = plan.ipus()[ipu];
    IpuMemoryReport ipuReport;
    ipuReport.ipu = static_cast<int64_t>(ipu);
    ipuReport.capacity = system.memoryCapacity();
    ipuReport.ioTiles = system.ioTiles;
    ipuReport.ioTileCapacity = system.ioTileMemory();
    ipuReport.ioTileBytes = bytesOn(buffers.ioTiles, ipu);
    ipuReport.temporaryBudget = bytesOn(buffers.temporaryBudget, ipu);
    auto regionBytes = [&](MemoryRegion region) {
      return layout.regionBytes[static_cast<size_t>(region)];
    };
    ipuReport.categories = {
        {"weights", regionBytes(MemoryRegion::Weights), true},
        {"gradient accumulators", regionBytes(MemoryRegion::Accumulators), true},
        {"optimizer state", regionBytes(MemoryRegion::OptimizerState), true},
        {"random state", regionBytes(MemoryRegion::RandomState), true},
        {"constants", regionBytes(MemoryRegion::Constants), true},
        {"input streams", regionBytes(MemoryRegion::InputStreams), true},
        {"prefetch buffers", bytesOn(buffers.prefetch, ipu), true},
        {"code", codeBytes(graph, ipuReport.ipu, system.spec()), true},
        {"activations", regionBytes(MemoryRegion::Activations), false},
        {"stash", bytesOn(buffers.stash, ipu), false},
        {"temporaries", bytesOn(buffers.temporaries, ipu), false},
        {"streamed in", bytesOn(buffers.streamedIn, ipu), false},
    };
    if (const uint64_t stash = bytesOn(buffers.stashOffChip, ipu); stash != 0) {
      ipuReport.streamingMemory.push_back({"stash", stash, false});
    }
    // Off-chip tensors move from their on-chip category to Streaming Memory.
    for (const ir::Value* root : buffers.offChip) {
      const TensorSlot& slot = plan.slot(root);
      if (slot.ipu != ipuReport.ipu) continue;
      const std::string name = memoryRegionName(slot.region);
      const uint64_t bytes = plan.footprint(root);
      for (MemoryCategory& category : ipuReport.categories) {
        if (category.name == name) category.bytes -= bytes;
      }
      auto offChip =
          std::find_if(ipuReport.streamingMemory.begin(), ipuReport.streamingMemory.end(),
                       [&](const MemoryCategory& c) { return c.name == name; });
      if (offChip == ipuReport.streamingMemory.end()) {
        ipuReport.streamingMemory.push_back({name, 0, true});
        offChip = std::prev(ipuReport.streamingMemory.end());
      }
      offChip->bytes += bytes;
    }
    std::vector<TensorMemory> tensors;
    for (const ir::Value* root : plan.roots()) {
      const TensorSlot& slot = plan.slot(root);
      if (slot.ipu != ipuReport.ipu || buffers.offChip.count(root) != 0) {
        continue;
      }
      tensors.push_back(
          {describeValue(*root), root->type().str(), memoryRegionName(slot.region), slot.bytes});
    }
    std::stable_sort(
        tensors.begin(), tensors.end(),
        [](const TensorMemory& a, const TensorMemory& b) { return a.bytes > b.bytes; });
    if (tensors.size() > kLargestTensors) {
      tensors.resize(kLargestTensors);
    }
    ipuReport.largestTensors = std::move(tensors);
    report.ipus.push_back(std::move(ipuReport));
  }
  return report;
}

void checkMemoryFits(const MemoryReport& report, const device::IpuSystemConfig& system) {
  for (const IpuMemoryReport& ipu : report.ipus) {
    if (ipu.fits()) {
      continue;
    }
    // The error's fields: the IPU, the category at fault and the largest tensors.
    ErrorSite site;
    site.ipu = ipu.ipu;
    site.largestTensors = ipu.largestTensors;
    if (ipu.ioTileBytes > ipu.ioTileCapacity) {
      site.category = "IO tiles";
      site.requiredBytes = ipu.ioTileBytes;
      site.capacityBytes = ipu.ioTileCapacity;
      throw CoreError(ErrorKind::OutOfMemory,
                      strCat("Out of memory on the IO tiles of IPU ", ipu.ipu,
                             ": the inputs and outputs that stream through them "
                             "(set_overlap_for_input / set_overlap_for_output, two buffers each) "
                             "need ",
                             formatBytes(ipu.ioTileBytes), " but its ", ipu.ioTiles,
                             " IO tiles have ", formatBytes(ipu.ioTileCapacity),
                             ". Set aside more with Options.TensorLocations.numIOTiles (at most "
                             "192), use a smaller micro-batch, or stream some of them with "
                             "OverlapMode.NoOverlap."),
                      std::move(site));
    }
    const MemoryCategory* largest = nullptr;
    for (const MemoryCategory& category : ipu.categories) {
      if (largest == nullptr || category.bytes > largest->bytes) largest = &category;
    }
    site.category = largest != nullptr ? largest->name : "";
    site.requiredBytes = ipu.total();
    site.capacityBytes = ipu.capacity;
    std::ostringstream message;
    message << "Out of memory on IPU " << ipu.ipu << ": the program needs "
            << formatBytes(ipu.total()) << " but IPU " << ipu.ipu << " has "
            << formatBytes(ipu.capacity) << " ("
            << (system.memoryPerIpu != 0 ? "set by Options.Simulator.memoryPerIpu"
                                         : std::string(system.chipFigures().name) + " SRAM")
            << (system.ioTiles != 0 ? strCat(" less its ", system.ioTiles, " IO tiles") : "")
            << ").\n  By category:";
    for (const MemoryCategory& category : ipu.categories) {
      if (category.bytes != 0) {
        message << "\n    " << category.name << ": " << formatBytes(category.bytes)
                << (category.alwaysLive ? " (always live)" : " (peak, not always live)");
      }
    }
    message << "\n  Largest tensors on IPU " << ipu.ipu << ":";
    for (const TensorMemory& tensor : ipu.largestTensors) {
      message << "\n    " << tensor.description << " " << tensor.type << ": "
              << formatBytes(tensor.bytes) << " (" << tensor.category << ")";
    }
    // Advice for the categories this IPU holds, the largest first, then the
    // splits and memory that help whatever holds the bytes.
    const auto bytesOf = [&](const std::string& name) -> uint64_t {
      for (const MemoryCategory& category : ipu.categories)
        if (category.name == name) return category.bytes;
      return 0;
    };
    std::vector<std::pair<uint64_t, std::string>> fixes;
    const uint64_t activations = bytesOf("activations") + bytesOf("stash");
    if (activations != 0) {
      fixes.emplace_back(activations,
                         bytesOf("stash") != 0 || bytesOf("gradient accumulators") != 0 ||
                                 bytesOf("optimizer state") != 0 // (a training program)
                             ? "recompute activations in the backward pass "
                               "(Options.Training.recomputation(True), with "
                               "popsim.recomputationCheckpoint) or use a smaller micro-batch"
                             : "use a smaller micro-batch");
    }
    if (bytesOf("optimizer state") != 0) {
      fixes.emplace_back(bytesOf("optimizer state"),
                         "keep the optimizer state off chip (Options.TensorLocations."
                         "setOptimizerLocation(TensorLocationSettings().useOnChipStorage(False))"
                         ", or shard it over replicas with useReplicatedTensorSharding(True))");
    }
    if (bytesOf("temporaries") != 0) {
      fixes.emplace_back(bytesOf("temporaries"),
                         strCat("lower IPU", ipu.ipu,
                                "'s availableMemoryProportion (Options."
                                "setAvailableMemoryProportion) so matmuls and convolutions run in "
                                "smaller passes"));
    }
    std::stable_sort(fixes.begin(), fixes.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    message << "\n  To make it fit: ";
    for (const auto& fix : fixes)
      message << fix.second << "; ";
    message << "split the model over more IPUs with popsim.Block and an execution strategy";
    const uint64_t chipBytes = system.chipFigures().memoryBytes();
    if (system.memoryPerIpu != 0 && ipu.total() <= chipBytes) {
      message << "; or give each IPU more memory with Options.Simulator.memoryPerIpu (at most "
              << formatBytes(chipBytes) << " on " << system.chipFigures().name << ")";
    }
    message << ".";
    throw CoreError(ErrorKind::OutOfMemory, message.str(), std::move(site));
  }
}

} // namespace popsim::memory
