#include "runtime/device_memory.h"

#include "common/check.h"

#include <cstdlib>
#include <cstring>

namespace popsim::runtime {
namespace {
constexpr size_t kAlignment = 64; // cache lines, and what oneDNN prefers
}

void DeviceMemory::FreeDeleter::operator()(void* data) const { std::free(data); }

DeviceMemory::DeviceMemory(const memory::MemoryPlan& plan) : plan_(plan) {
  for (const memory::IpuMemoryLayout& layout : plan.ipus()) {
    std::array<Buffer, memory::kNumMemoryRegions> buffers;
    for (size_t region = 0; region < memory::kNumMemoryRegions; ++region) {
      const size_t bytes = (layout.regionBytes[region] + kAlignment - 1) / kAlignment * kAlignment;
      if (bytes == 0) {
        continue;
      }
      void* data = std::aligned_alloc(kAlignment, bytes);
      POPSIM_CHECK(data != nullptr, ErrorKind::OutOfMemory, "the host could not allocate ",
                   formatBytes(bytes), " to simulate IPU memory.");
      // Zeroed so that a program never reads uninitialised host memory.
      std::memset(data, 0, bytes);
      buffers[region] = Buffer(data);
    }
    regions_.push_back(std::move(buffers));
  }
}

void* DeviceMemory::address(const ir::Value* value) const {
  const memory::TensorSlot& slot = plan_.slot(value);
  void* base = regions_.at(static_cast<size_t>(slot.ipu))[static_cast<size_t>(slot.region)].get();
  if (base == nullptr) {
    return nullptr; // zero-byte region: only empty tensors live here
  }
  return static_cast<uint8_t*>(base) + slot.offset;
}

} // namespace popsim::runtime
