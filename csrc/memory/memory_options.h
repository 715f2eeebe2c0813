#pragma once

#include "device/ipu_system.h"
#include "memory/off_chip_placement.h"

#include <cstdint>
#include <map>

namespace popsim::memory {

// What the memory plan of a program is asked for: where each kind of tensor
// lives, how much of each IPU a matmul or convolution may use for its
// temporaries, and the input buffers prefetching needs.
struct MemoryOptions {
  // Where each kind of tensor lives. An off-chip tensor is streamed in before
  // each task that reads it and back out after each task that writes it:
  // - the optimizer state around each weight update;
  // - weights (and buffers) around every forward, backward and update task
  //   that uses them;
  // - gradient accumulators around each micro-batch's accumulation and the
  //   update;
  // - activations: the pipeline's stash, out after the forward task that
  //   produces a value and in before the backward task that reads it.
  TensorLocation weights;
  TensorLocation optimizerState;
  TensorLocation accumulators;
  TensorLocation activations;
  // Share of each IPU's memory (by IPU index) a matmul or convolution may use
  // for its temporaries: PopTorch's availableMemoryProportion. IPUs not listed
  // use kDefaultAvailableMemoryProportion.
  std::map<int64_t, double> availableMemoryProportion;
  // Input micro-batches whose host's part each IPU's host link may prepare
  // ahead of the task that reads them, into as many extra buffers (PopART's
  // prefetch buffering). With 0 an input streams when its task starts; with 1
  // or more its host's part overlaps the work before (its bytes still cross
  // on the compute tiles, or beforehand through IO tiles).
  int64_t prefetchDepth = 1;
  // Precision.setPartialsType(torch.half): float16 matmuls and convolutions
  // accumulate in float16, so their partial sums take half the bytes.
  bool halfPartials = false;

  // Throws InvalidOption naming the setting for what users can get wrong
  // (IO tile routes without IO tiles); asserts what the Python API checks.
  void validate(const device::IpuSystemConfig& system) const;
};

} // namespace popsim::memory
