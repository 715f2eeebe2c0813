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
  // PopART's prefetch buffering depth (defaultPrefetchBufferingDepth, 1 by
  // default): the slots of the circular buffer each input streams through,
  // each an extra buffer of the input. One slot holds the transfer in
  // flight, so the host prepares inputsPreparedAhead() = depth - 1
  // micro-batches ahead. PopTorch's I/O guide: at depth 1 the IPU waits for
  // the host at every transfer (its StreamCopyBegin and End phases), and
  // multibuffering (a depth above 1) removes those waits. 0 is taken as 1's
  // single slot without the buffer.
  int64_t prefetchDepth = 1;
  // Micro-batches whose host's part each IPU's host link prepares ahead of
  // the task that reads them (the clock's look-ahead); with none, each
  // input's host part starts when its task is ready, on the IPU's path.
  int64_t inputsPreparedAhead() const { return prefetchDepth > 1 ? prefetchDepth - 1 : 0; }
  // Precision.setPartialsType(torch.half): float16 matmuls and convolutions
  // accumulate in float16, so their partial sums take half the bytes.
  bool halfPartials = false;

  // Throws InvalidOption naming the setting for what users can get wrong
  // (IO tile routes without IO tiles); asserts what the Python API checks.
  void validate(const device::IpuSystemConfig& system) const;
};

} // namespace popsim::memory
