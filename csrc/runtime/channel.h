#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace popsim::runtime {

// A FIFO of fixed-size messages between two tasks: an inter-IPU copy in
// flight, or a stage's stash of activations waiting for its backward pass.
// Producers and consumers handle micro-batches in the same order, so FIFO
// order is micro-batch order. Buffers are recycled, so a warmed-up channel
// does not allocate.
class Channel {
public:
  explicit Channel(size_t bytes) : bytes_(bytes) {}

  // Copies `bytes()` bytes from `source` into a new message.
  void push(const void* source);
  // Waits for the oldest message and copies it to `destination`. Throws
  // ChannelAborted once abort() was called, so a failing IPU thread cannot
  // leave the others waiting forever.
  void pop(void* destination);
  void abort();
  // Drops waiting messages and clears abort() (after a failed call).
  void reset();
  // Messages waiting (for tests and checks).
  size_t size() const;
  size_t bytes() const { return bytes_; }

private:
  const size_t bytes_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::vector<uint8_t>> messages_;
  std::vector<std::vector<uint8_t>> free_;
  bool aborted_ = false;
};

struct ChannelAborted {};

} // namespace popsim::runtime
