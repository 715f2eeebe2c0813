// Memory planning.
//
// 1. Storage roots: a view (reshape) shares its input's bytes, so every value
//    maps to the root value that owns storage. In the simulated IPU's plan
//    (not the host's), so does a cast the IPU does not run (ir::isFreeOnIpu).
// 2. IPU of a root: its producer's, else its first user's (homeIpu).
// 3. Weights, constants and input stream buffers are laid out one after the
//    other in their own regions; they are live for the whole program.
// 4. Activations get lifetimes [producing step, last step using any alias];
//    graph outputs stay live to the end so they can be copied to the host.
// 5. Offsets: largest buffers first, each at the lowest offset that does not
//    overlap a placed buffer with an overlapping lifetime (greedy by size).
// 6. The activation region of an IPU is the highest end offset; the live peak
//    (a lower bound) is recorded beside it for the memory report.

#include "memory/memory_plan.h"

#include "common/check.h"
#include "ir/op_schema.h"

#include <algorithm>

namespace popsim::memory {
namespace {

size_t alignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

MemoryRegion regionOf(const ir::Value* root) {
  switch (root->role()) {
  case ir::ValueRole::Weight: return MemoryRegion::Weights;
  case ir::ValueRole::State:
    switch (root->stateKind()) {
    case ir::StateKind::Accumulator: return MemoryRegion::Accumulators;
    case ir::StateKind::Optimizer: return MemoryRegion::OptimizerState;
    case ir::StateKind::Random: return MemoryRegion::RandomState;
    }
    return MemoryRegion::OptimizerState;
  case ir::ValueRole::Constant: return MemoryRegion::Constants;
  case ir::ValueRole::Input: return MemoryRegion::InputStreams;
  case ir::ValueRole::Computed: return MemoryRegion::Activations;
  }
  return MemoryRegion::Activations;
}

// Places activation buffers of one IPU; returns the arena size.
size_t placeActivations(std::vector<TensorSlot*>& buffers, size_t alignment) {
  std::stable_sort(buffers.begin(), buffers.end(), [](const TensorSlot* a, const TensorSlot* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->lifetime.first < b->lifetime.first;
  });
  std::vector<const TensorSlot*> placed;
  size_t arena = 0;
  for (TensorSlot* buffer : buffers) {
    std::vector<const TensorSlot*> conflicts;
    for (const TensorSlot* other : placed) {
      if (other->lifetime.overlaps(buffer->lifetime)) {
        conflicts.push_back(other);
      }
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [](const TensorSlot* a, const TensorSlot* b) { return a->offset < b->offset; });
    size_t offset = 0;
    for (const TensorSlot* other : conflicts) {
      if (offset + buffer->bytes <= other->offset) {
        break;
      }
      offset = std::max(offset, alignUp(other->offset + other->bytes, alignment));
    }
    buffer->offset = offset;
    arena = std::max(arena, alignUp(offset + buffer->bytes, alignment));
    placed.push_back(buffer);
  }
  return arena;
}

} // namespace

const char* memoryRegionName(MemoryRegion region) {
  switch (region) {
  case MemoryRegion::Weights: return "weights";
  case MemoryRegion::Accumulators: return "gradient accumulators";
  case MemoryRegion::OptimizerState: return "optimizer state";
  case MemoryRegion::RandomState: return "random state";
  case MemoryRegion::Constants: return "constants";
  case MemoryRegion::InputStreams: return "input streams";
  case MemoryRegion::Activations: return "activations";
  }
  return "?";
}

size_t simulatedBytes(const ir::Value& value) {
  const ir::Node* producer = value.producer();
  if (producer != nullptr && producer->placement().float16OnIpu &&
      value.type().dtype == ir::DType::Float32) {
    return value.type().bytes() / 2;
  }
  return value.type().bytes();
}

size_t MemoryPlan::footprint(const ir::Value* root) const {
  const TensorSlot& placed = slot(root);
  return placed.region == MemoryRegion::Activations ? placed.bytes
                                                    : alignUp(placed.bytes, alignment_);
}

size_t IpuMemoryLayout::total() const {
  size_t sum = 0;
  for (size_t bytes : regionBytes) {
    sum += bytes;
  }
  return sum;
}

const TensorSlot& MemoryPlan::slot(const ir::Value* value) const {
  auto it = slots_.find(storageRoot(value));
  POPSIM_ASSERT(it != slots_.end(), "value #", value->id(), " has no memory slot.");
  return it->second;
}

const ir::Value* MemoryPlan::storageRoot(const ir::Value* value) const {
  auto it = roots_of_.find(value);
  return it == roots_of_.end() ? value : it->second;
}

MemoryPlan planMemory(const ir::Graph& graph, const MemoryPlanOptions& options) {
  POPSIM_ASSERT(options.numIpus >= 1 && options.alignment >= 1, "bad memory plan options.");
  MemoryPlan plan;
  plan.ipus_.resize(static_cast<size_t>(options.numIpus));
  plan.alignment_ = options.alignment;
  const int64_t endStep = static_cast<int64_t>(graph.nodes().size());

  // Step 1: storage roots, and the roots in a deterministic order.
  for (const ir::Value* leaf : graph.inputs())
    plan.roots_.push_back(leaf);
  for (const ir::Value* leaf : graph.weights())
    plan.roots_.push_back(leaf);
  for (const ir::Value* leaf : graph.states())
    plan.roots_.push_back(leaf);
  for (const ir::Value* leaf : graph.constants())
    plan.roots_.push_back(leaf);
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* output : node->outputs()) {
      if (options.hostStorage ? ir::isViewOp(node->kind()) : ir::isFreeOnIpu(*node)) {
        plan.roots_of_[output] = plan.storageRoot(node->input(0));
      } else {
        plan.roots_.push_back(output);
      }
    }
  }

  // Steps 2-3: slots of every root; fixed regions are laid out in order.
  for (const ir::Value* root : plan.roots_) {
    TensorSlot slot;
    slot.ipu = ir::homeIpu(*root);
    POPSIM_CHECK_OPTION(slot.ipu >= 0 && slot.ipu < options.numIpus, "Simulator.numIpus",
                        "a tensor is placed on IPU ", slot.ipu, " but the system has ",
                        options.numIpus, " IPU(s).");
    slot.region = regionOf(root);
    slot.bytes = options.hostStorage ? root->type().storageBytes() : simulatedBytes(*root);
    if (slot.region == MemoryRegion::Activations) {
      slot.lifetime = {root->producer() != nullptr ? 0 : -1, 0};
    } else {
      slot.lifetime = {-1, endStep};
      size_t& regionEnd = plan.ipus_[slot.ipu].regionBytes[static_cast<size_t>(slot.region)];
      slot.offset = regionEnd;
      regionEnd = alignUp(regionEnd + slot.bytes, options.alignment);
    }
    plan.slots_[root] = slot;
  }

  // Step 4: activation lifetimes from the schedule.
  for (int64_t step = 0; step < endStep; ++step) {
    const ir::Node& node = *graph.nodes()[static_cast<size_t>(step)];
    for (const ir::Value* output : node.outputs()) {
      TensorSlot& slot = plan.slots_.at(plan.storageRoot(output));
      if (output == plan.storageRoot(output)) {
        slot.lifetime = {step, step};
      }
    }
    for (const ir::Value* input : node.inputs()) {
      TensorSlot& slot = plan.slots_.at(plan.storageRoot(input));
      if (slot.region == MemoryRegion::Activations) {
        slot.lifetime.last = std::max(slot.lifetime.last, step);
      }
    }
  }
  for (const ir::Value* output : graph.outputs()) {
    TensorSlot& slot = plan.slots_.at(plan.storageRoot(output));
    if (slot.region == MemoryRegion::Activations) {
      slot.lifetime.last = endStep;
    }
  }

  // Steps 5-6: per-IPU arenas and live peaks.
  for (int64_t ipu = 0; ipu < options.numIpus; ++ipu) {
    std::vector<TensorSlot*> buffers;
    for (const ir::Value* root : plan.roots_) {
      TensorSlot& slot = plan.slots_.at(root);
      if (slot.ipu == ipu && slot.region == MemoryRegion::Activations) {
        buffers.push_back(&slot);
      }
    }
    IpuMemoryLayout& layout = plan.ipus_[static_cast<size_t>(ipu)];
    layout.regionBytes[static_cast<size_t>(MemoryRegion::Activations)] =
        placeActivations(buffers, options.alignment);
    // Live bytes change only where a lifetime starts or ends: sweep those points.
    std::vector<std::pair<int64_t, int64_t>> events; // (step, +bytes at first / -bytes after last)
    for (const TensorSlot* buffer : buffers) {
      events.emplace_back(buffer->lifetime.first, static_cast<int64_t>(buffer->bytes));
      events.emplace_back(buffer->lifetime.last + 1, -static_cast<int64_t>(buffer->bytes));
    }
    std::sort(events.begin(), events.end()); // frees sort before allocations at the same step
    int64_t live = 0;
    for (const auto& [step, delta] : events) {
      live += delta;
      if (live > static_cast<int64_t>(layout.activationLivePeak)) {
        layout.activationLivePeak = static_cast<size_t>(live);
        layout.activationPeakStep = step;
      }
    }
  }
  return plan;
}

std::vector<size_t> MemoryPlan::liveActivationBytes(int64_t ipu, int64_t steps) const {
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 1, 0);
  for (const ir::Value* root : roots_) {
    const TensorSlot& slot = slots_.at(root);
    if (slot.ipu != ipu || slot.region != MemoryRegion::Activations) continue;
    const int64_t first = std::clamp<int64_t>(slot.lifetime.first, 0, steps);
    const int64_t end = std::clamp<int64_t>(slot.lifetime.last + 1, 0, steps);
    if (first >= end) continue;
    delta[static_cast<size_t>(first)] += static_cast<int64_t>(slot.bytes);
    delta[static_cast<size_t>(end)] -= static_cast<int64_t>(slot.bytes);
  }
  std::vector<size_t> live(static_cast<size_t>(steps), 0);
  int64_t running = 0;
  for (int64_t step = 0; step < steps; ++step) {
    running += delta[static_cast<size_t>(step)];
    live[static_cast<size_t>(step)] = static_cast<size_t>(running);
  }
  return live;
}

} // namespace popsim::memory
