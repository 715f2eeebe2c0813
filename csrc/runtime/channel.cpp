#include "runtime/channel.h"

#include <cstring>

namespace popsim::runtime {

void Channel::push(const void* source) {
  std::vector<uint8_t> message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      message = std::move(free_.back());
      free_.pop_back();
    }
  }
  message.resize(bytes_);
  if (bytes_ != 0) std::memcpy(message.data(), source, bytes_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.push_back(std::move(message));
  }
  ready_.notify_one();
}

void Channel::pop(void* destination) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return aborted_ || !messages_.empty(); });
  if (aborted_) throw ChannelAborted{};
  std::vector<uint8_t> message = std::move(messages_.front());
  messages_.pop_front();
  lock.unlock();
  if (bytes_ != 0) std::memcpy(destination, message.data(), bytes_);
  lock.lock();
  free_.push_back(std::move(message));
}

void Channel::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
  }
  ready_.notify_all();
}

void Channel::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!messages_.empty()) {
    free_.push_back(std::move(messages_.front()));
    messages_.pop_front();
  }
  aborted_ = false;
}

size_t Channel::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return messages_.size();
}

} // namespace popsim::runtime
