#pragma once

#include <cstddef>
#include <cstdint>

// Working memory the reference kernels reuse from one call to the next.
//
// A kernel that allocated its gathers and packed operands anew on every call
// spent more time in the allocator's fresh pages (a page fault per 4 KiB)
// and in zeroing them than in its arithmetic: a float16-partials training
// step of the tutorial's MNIST network was 13x its float32 step, mostly in
// memset and page faults. Each thread keeps one buffer per purpose, grown to
// the largest request and not zeroed; a buffer larger than kKeptScratchBytes
// is given back when its use ends, so a large model's one big gather does not
// stay resident.
namespace popsim::kernels::reference {

// What a buffer holds. Two live uses on one thread need different purposes.
enum class ScratchUse {
  ProductRows,         // halfPartialsProduct's left operand, converted to double
  ProductRowsOfFloats, // or gathered as floats
  ProductPanels,       // its right operand, packed (or a panel of it gathered)
  ProductZeros,        // its row of zeros
  Gathered,            // a kernel's gathered operand (im2col columns, dY rows)
  GatheredOther,       // the same kernel's second gathered operand
  Results,             // a kernel's results before they are scattered
  Count,
};

constexpr size_t kKeptScratchBytes = size_t{64} << 20;

// The untyped buffers behind Scratch (scratch.cpp). Acquiring a use that is
// already live on this thread is an internal error.
void* acquireScratchBytes(ScratchUse use, size_t bytes);
void releaseScratchBytes(ScratchUse use);

// A buffer of `count` elements of T for the current thread, its contents
// undefined, until the object is destroyed.
template <typename T> class Scratch {
public:
  Scratch(ScratchUse use, size_t count)
      : use_(use), data_(static_cast<T*>(acquireScratchBytes(use, count * sizeof(T)))) {}
  ~Scratch() { releaseScratchBytes(use_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  T* data() const { return data_; }
  T& operator[](size_t i) const { return data_[i]; }

private:
  ScratchUse use_;
  T* data_;
};

} // namespace popsim::kernels::reference
