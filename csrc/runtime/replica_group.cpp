#include "runtime/replica_group.h"

#include "common/check.h"

#include <algorithm>
#include <cstring>

namespace popsim::runtime {

class ReplicaGroup::Member : public kernels::ReplicaCollectives {
public:
  Member(std::shared_ptr<ReplicaGroup> group, int64_t index)
      : group_(std::move(group)), index_(index) {}
  void allReduceSum(const std::string& key, int64_t ipu, float* data, size_t count) override {
    group_->allReduceSum(index_, key, ipu, data, count);
  }
  void allReduceSumInGroup(const std::string& key, int64_t ipu, float* data, size_t count,
                           int64_t groupSize, int64_t stride) override {
    group_->allReduceSumInGroup(index_, key, ipu, data, count, groupSize, stride);
  }
  int64_t replicaIndex() const override { return group_->firstIndex() + index_; }

private:
  std::shared_ptr<ReplicaGroup> group_;
  int64_t index_;
};

ReplicaGroup::ReplicaGroup(int64_t replicas, CrossProcessSum crossProcess, int64_t firstIndex)
    : replicas_(replicas), firstIndex_(firstIndex), crossProcess_(std::move(crossProcess)) {
  POPSIM_CHECK(replicas >= 1, ErrorKind::InvalidOption,
               "a replica group needs at least one "
               "replica, got ",
               replicas, ".");
}

std::unique_ptr<kernels::ReplicaCollectives> ReplicaGroup::member(int64_t index) {
  POPSIM_CHECK(index >= 0 && index < replicas_, ErrorKind::InvalidOption, "replica ", index,
               " of a group of ", replicas_, " replicas (0 to ", replicas_ - 1, ").");
  return std::make_unique<Member>(shared_from_this(), index);
}

void ReplicaGroup::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) abortReason_ = reason;
    aborted_ = true;
  }
  changed_.notify_all();
}

void ReplicaGroup::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = false;
  abortReason_.clear();
  meetings_.clear();
}

void ReplicaGroup::throwAborted(const std::string& key, int64_t replica) const {
  throwError(ErrorKind::Execution, strCat("replica ", replica, " stopped in the all-reduce of '",
                                          key, "' because another replica failed: ", abortReason_));
}

void ReplicaGroup::allReduceSum(int64_t replica, const std::string& key, int64_t ipu, float* data,
                                size_t count) {
  meet(replica, key, key, ipu, replicas_, replica, data, count, true);
}

void ReplicaGroup::allReduceSumInGroup(int64_t replica, const std::string& key, int64_t ipu,
                                       float* data, size_t count, int64_t groupSize,
                                       int64_t stride) {
  // The groups lie within this process (the Python side checks it).
  POPSIM_ASSERT(groupSize >= 1 && replicas_ % groupSize == 0 &&
                    (stride == 1 || stride * groupSize == replicas_),
                "groups of ", groupSize, " replicas with stride ", stride, " among ", replicas_,
                " replicas of one process.");
  // Consecutive: replicas g k .. g k + k - 1; with a stride m: g, g + m, ...
  const int64_t group = stride == 1 ? replica / groupSize : replica % stride;
  const int64_t position = stride == 1 ? replica % groupSize : replica / stride;
  meet(replica, key, strCat(key, "#group", group), ipu, groupSize, position, data, count, false);
}

void ReplicaGroup::meet(int64_t replica, const std::string& key, const std::string& meetingKey,
                        int64_t ipu, int64_t participants, int64_t position, float* data,
                        size_t count, bool acrossProcesses) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A replica may come back for the next meeting under this key (the next
  // micro-batch's) before the others have left the last one: it waits.
  changed_.wait(lock, [&] {
    const auto last = meetings_.find({meetingKey, ipu});
    return aborted_ || last == meetings_.end() || !last->second.summed;
  });
  if (aborted_) throwAborted(key, replica);
  Meeting& meeting = meetings_[{meetingKey, ipu}];
  if (meeting.buffers.empty()) {
    meeting.buffers.assign(static_cast<size_t>(participants), nullptr);
    meeting.count = count;
  }
  POPSIM_ASSERT(meeting.count == count && meeting.buffers[static_cast<size_t>(position)] == nullptr,
                "replica ", replica, " reduced '", key, "' twice or with another size.");
  meeting.buffers[static_cast<size_t>(position)] = data;
  if (++meeting.arrived == participants) {
    lock.unlock(); // the others wait for `summed`; other meetings go on
    try {
      sumArrived(meeting, key, ipu, acrossProcesses);
    } catch (const std::exception& error) {
      abort(error.what());
      throw;
    }
    lock.lock();
    meeting.summed = true;
    changed_.notify_all();
  } else {
    changed_.wait(lock, [&] { return meeting.summed || aborted_; });
    if (!meeting.summed) throwAborted(key, replica);
  }
  std::memcpy(data, meeting.sum.data(), count * sizeof(float));
  if (++meeting.left == participants) {
    meetings_.erase({meetingKey, ipu});
    changed_.notify_all();
  }
}

void ReplicaGroup::sumArrived(Meeting& meeting, const std::string& key, int64_t ipu,
                              bool acrossProcesses) {
  // Only this thread touches the meeting's sum until `summed` is set.
  meeting.sum.assign(meeting.buffers[0], meeting.buffers[0] + meeting.count);
  for (size_t replica = 1; replica < meeting.buffers.size(); ++replica) {
    const float* buffer = meeting.buffers[replica];
    for (size_t i = 0; i < meeting.count; ++i)
      meeting.sum[i] += buffer[i];
  }
  if (acrossProcesses && crossProcess_) crossProcess_(key, ipu, meeting.sum.data(), meeting.count);
}

} // namespace popsim::runtime
