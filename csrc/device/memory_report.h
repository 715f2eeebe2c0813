#pragma once

#include "device/ipu_system.h"
#include "ir/graph.h"
#include "passes/memory_plan.h"

#include <string>
#include <vector>

namespace popsim::device {

// Bytes of one category on one IPU. Always-live memory (weights, constants,
// stream buffers, code) is held for the whole program; the rest (activations,
// the pipeline stash) only while in use, which is how Graphcore's tools report memory.
struct MemoryCategory {
  std::string name;
  uint64_t bytes = 0;
  bool alwaysLive = true;
};

struct TensorMemory {
  std::string description; // "layer3.weight (weight)", "output of conv2d at m.py:7"
  std::string type;        // "f32[256,320]"
  std::string category;
  uint64_t bytes = 0;
};

struct IpuMemoryReport {
  int64_t ipu = 0;
  uint64_t capacity = 0;
  std::vector<MemoryCategory> categories;
  std::vector<TensorMemory> largestTensors; // at most kLargestTensors, largest first

  uint64_t total() const;
  uint64_t alwaysLive() const;
  uint64_t notAlwaysLive() const;
  bool fits() const { return total() <= capacity; }
};

struct MemoryReport {
  std::string chip;
  std::vector<IpuMemoryReport> ipus;
};

constexpr size_t kLargestTensors = 5;

// Per-IPU memory of a planned program: the plan's regions, code, and the
// pipeline's stash of activations kept for later backward passes (bytes per
// IPU; empty without pipelining).
MemoryReport buildMemoryReport(const ir::Graph& graph, const passes::MemoryPlan& plan,
                               const IpuSystemConfig& system,
                               const std::vector<uint64_t>& stashBytes = {});

// Throws OutOfMemory for the first IPU whose program does not fit, naming the
// IPU, bytes needed and available, each category and the largest tensors.
void checkMemoryFits(const MemoryReport& report, const IpuSystemConfig& system);

// How a value is named in reports and errors.
std::string describeValue(const ir::Value& value);

} // namespace popsim::device
