#include "kernels/reference/scratch.h"

#include "common/check.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <new>

namespace popsim::kernels::reference {
namespace {

struct FreeBytes {
  void operator()(void* data) const { std::free(data); }
};

struct Buffer {
  std::unique_ptr<void, FreeBytes> data;
  size_t bytes = 0;
  bool live = false;
};

// 64-byte aligned, so that the packed operands' rows start on cache lines.
constexpr size_t kAlignment = 64;

std::array<Buffer, static_cast<size_t>(ScratchUse::Count)>& buffers() {
  thread_local std::array<Buffer, static_cast<size_t>(ScratchUse::Count)> perThread;
  return perThread;
}

} // namespace

void* acquireScratchBytes(ScratchUse use, size_t bytes) {
  Buffer& buffer = buffers()[static_cast<size_t>(use)];
  POPSIM_ASSERT(!buffer.live, "a kernel acquired scratch use ", static_cast<int>(use),
                " while it was in use on the same thread.");
  buffer.live = true;
  if (bytes > buffer.bytes) {
    const size_t rounded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    buffer.data.reset(std::aligned_alloc(kAlignment, rounded));
    if (buffer.data == nullptr) {
      buffer.bytes = 0;
      buffer.live = false;
      throw std::bad_alloc();
    }
    buffer.bytes = rounded;
  }
  return buffer.data.get();
}

void releaseScratchBytes(ScratchUse use) {
  Buffer& buffer = buffers()[static_cast<size_t>(use)];
  buffer.live = false;
  if (buffer.bytes > kKeptScratchBytes) {
    buffer.data.reset();
    buffer.bytes = 0;
  }
}

} // namespace popsim::kernels::reference
