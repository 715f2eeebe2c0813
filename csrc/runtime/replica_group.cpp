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

ReplicaGroup::ReplicaGroup(int64_t replicas, CrossProcessSum crossProcess, int64_t firstIndex,
                           int64_t jobReplicas)
    : replicas_(replicas), firstIndex_(firstIndex),
      jobReplicas_(jobReplicas > 0 ? jobReplicas : replicas),
      crossProcess_(std::move(crossProcess)) {
  POPSIM_CHECK(replicas >= 1, ErrorKind::InvalidOption,
               "a replica group needs at least one replica, got ", replicas, ".");
  POPSIM_CHECK(firstIndex >= 0 && firstIndex + replicas <= jobReplicas_, ErrorKind::InvalidOption,
               "replicas ", firstIndex, " to ", firstIndex + replicas - 1, " of a job of ",
               jobReplicas_, " replicas.");
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
  meet(replica, key, key, ipu, replicas_, replica, data, count, Across{true, std::nullopt});
}

void ReplicaGroup::allReduceSumInGroup(int64_t replica, const std::string& key, int64_t ipu,
                                       float* data, size_t count, int64_t groupSize,
                                       int64_t stride) {
  POPSIM_ASSERT(groupSize >= 1 && jobReplicas_ % groupSize == 0 &&
                    (stride == 1 || stride * groupSize == jobReplicas_),
                "groups of ", groupSize, " replicas with stride ", stride, " among ", jobReplicas_,
                " replicas.");
  // The job's replicas: Consecutive groups g k .. g k + k - 1; with a stride
  // m, g, g + m, ... This process's members of the group meet here; a group
  // with members in other processes then sums across those.
  const auto groupOf = [&](int64_t local) {
    const int64_t job = firstIndex_ + local;
    return stride == 1 ? job / groupSize : job % stride;
  };
  const int64_t group = groupOf(replica);
  int64_t participants = 0;
  int64_t position = 0;
  for (int64_t local = 0; local < replicas_; ++local) {
    if (groupOf(local) != group) continue;
    if (local < replica) ++position;
    ++participants;
  }
  const Across across{participants < groupSize, JobGroup{groupSize, stride, group}};
  meet(replica, key, strCat(key, "#group", group), ipu, participants, position, data, count,
       across);
}

void ReplicaGroup::meet(int64_t replica, const std::string& key, const std::string& meetingKey,
                        int64_t ipu, int64_t participants, int64_t position, float* data,
                        size_t count, const Across& across) {
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
      sumArrived(meeting, key, ipu, across);
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
                              const Across& across) {
  // Only this thread touches the meeting's sum until `summed` is set.
  meeting.sum.assign(meeting.buffers[0], meeting.buffers[0] + meeting.count);
  for (size_t replica = 1; replica < meeting.buffers.size(); ++replica) {
    const float* buffer = meeting.buffers[replica];
    for (size_t i = 0; i < meeting.count; ++i)
      meeting.sum[i] += buffer[i];
  }
  if (across.processes && crossProcess_) {
    crossProcess_(key, ipu, across.group ? &*across.group : nullptr, meeting.sum.data(),
                  meeting.count);
  }
}

} // namespace popsim::runtime
