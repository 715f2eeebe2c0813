#pragma once

#include "memory/memory_plan.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace popsim::runtime {

// The host memory that stands in for the simulated IPUs' SRAM: one aligned
// buffer per region per IPU, sized and laid out by the memory plan.
class DeviceMemory {
public:
  explicit DeviceMemory(const memory::MemoryPlan& plan);
  // The address of a value's bytes (views resolve to their storage).
  void* address(const ir::Value* value) const;

private:
  // Unmaps a buffer of `bytes` bytes.
  struct Unmap {
    size_t bytes = 0;
    void operator()(void* data) const;
  };
  using Buffer = std::unique_ptr<void, Unmap>;

  const memory::MemoryPlan& plan_;
  std::vector<std::array<Buffer, memory::kNumMemoryRegions>> regions_;
};

} // namespace popsim::runtime
