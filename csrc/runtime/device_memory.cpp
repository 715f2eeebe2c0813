#include "runtime/device_memory.h"

#include "common/check.h"

#include <sys/mman.h>

namespace popsim::runtime {
namespace {
constexpr size_t kAlignment = 64; // cache lines, and what oneDNN prefers
}

void DeviceMemory::Unmap::operator()(void* data) const { munmap(data, bytes); }

DeviceMemory::DeviceMemory(const memory::MemoryPlan& plan) : plan_(plan) {
  for (const memory::IpuMemoryLayout& layout : plan.ipus()) {
    std::array<Buffer, memory::kNumMemoryRegions> buffers;
    for (size_t region = 0; region < memory::kNumMemoryRegions; ++region) {
      const size_t bytes = (layout.regionBytes[region] + kAlignment - 1) / kAlignment * kAlignment;
      if (bytes == 0) {
        continue;
      }
      // Anonymous pages are zero (a program never reads uninitialised host
      // memory) and page-aligned, and the host commits each one only when the
      // program first touches it: unlike a memset of the whole plan, bytes a
      // run never uses cost neither time when compiling nor resident memory.
      void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      POPSIM_CHECK(data != MAP_FAILED, ErrorKind::OutOfMemory, "the host could not allocate ",
                   formatBytes(bytes), " to simulate IPU memory.");
      buffers[region] = Buffer(data, Unmap{bytes});
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
