#pragma once

#include "kernels/replica_collectives.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace popsim::runtime {

// The replicas of one model that this process runs (replicationFactor),
// which sum their gradients through it. Each replica is an Executable of
// the same program, running on its own host threads; at each
// replica_all_reduce they meet here, the last to arrive adds the buffers in
// replica order (so every replica gets the same bits, whoever came last) and,
// in a distributed job, sums the result across processes.
class ReplicaGroup : public std::enable_shared_from_this<ReplicaGroup> {
public:
  // One group of the job's replicas of a replica-grouped variable: the
  // groups hold `size` replicas each, neighbours (stride 1) or every
  // stride-th replica; this is group `index`.
  struct JobGroup {
    int64_t size = 0;
    int64_t stride = 0;
    int64_t index = 0;
  };
  // Sums `count` floats in place across the job's processes (torch.distributed
  // in the Python bindings): all of them (`group` null) or those holding
  // replicas of `group`. Called once per all-reduce by one thread.
  using CrossProcessSum = std::function<void(const std::string& key, int64_t ipu,
                                             const JobGroup* group, float* data, size_t count)>;

  // `firstIndex`: the job-wide index of this process's first replica (its
  // replicas are numbered on from there; sharded tensors follow them);
  // `jobReplicas` counts the job's replicas (0: this process's only).
  explicit ReplicaGroup(int64_t replicas, CrossProcessSum crossProcess = {}, int64_t firstIndex = 0,
                        int64_t jobReplicas = 0);
  int64_t replicas() const { return replicas_; }
  int64_t firstIndex() const { return firstIndex_; }
  int64_t jobReplicas() const { return jobReplicas_; }
  // The collectives replica `index` (0 <= index < replicas) runs with.
  std::unique_ptr<kernels::ReplicaCollectives> member(int64_t index);
  // A replica failed with `reason`: every all-reduce waiting now, or started
  // before reset(), throws an Execution error saying so. The first reason
  // is kept.
  void abort(const std::string& reason);
  // Forgets a failed call (between calls, while no replica runs).
  void reset();

private:
  class Member;
  // One all-reduce in progress: the replicas' buffers, then their sum.
  struct Meeting {
    std::vector<float*> buffers;
    size_t count = 0;
    int64_t arrived = 0;
    int64_t left = 0;
    bool summed = false;
    std::vector<float> sum;
  };
  void allReduceSum(int64_t replica, const std::string& key, int64_t ipu, float* data,
                    size_t count);
  void allReduceSumInGroup(int64_t replica, const std::string& key, int64_t ipu, float* data,
                           size_t count, int64_t groupSize, int64_t stride);
  // Which processes a meeting's sum is summed across afterwards.
  struct Across {
    bool processes = false;
    std::optional<JobGroup> group; // unset: all of them
  };
  // Replica `replica` brings `data` to the meeting `meetingKey` of
  // `participants`, at `position` among them; returns with their sum.
  void meet(int64_t replica, const std::string& key, const std::string& meetingKey, int64_t ipu,
            int64_t participants, int64_t position, float* data, size_t count,
            const Across& across);
  void sumArrived(Meeting& meeting, const std::string& key, int64_t ipu, const Across& across);
  [[noreturn]] void throwAborted(const std::string& key, int64_t replica) const;

  const int64_t replicas_;
  const int64_t firstIndex_;
  const int64_t jobReplicas_;
  const CrossProcessSum crossProcess_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::pair<std::string, int64_t>, Meeting> meetings_; // by (key, IPU)
  bool aborted_ = false;
  std::string abortReason_;
};

} // namespace popsim::runtime
