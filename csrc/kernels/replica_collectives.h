#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// How one replica of a replicated program reaches the replicas it trains
// with (replicationFactor, and the processes of a distributed job). The
// runtime provides it; replica_all_reduce kernels call it from their IPU's
// thread, so it must be safe to call from several threads at once.
namespace popsim::kernels {

class ReplicaCollectives {
public:
  virtual ~ReplicaCollectives() = default;
  // Replaces `data` (`count` floats) by its element-wise sum over every
  // replica. All replicas call it with the same key, IPU and count; it
  // returns when all have (each gets the same sum) and throws popsim::CoreError
  // when another replica failed.
  virtual void allReduceSum(const std::string& key, int64_t ipu, float* data, size_t count) = 0;
  // The same within this replica's group only (replica-grouped variables):
  // groups of `groupSize` of the job's replicas, neighbours when `stride` is
  // 1, else every `stride`-th replica (PopTorch's Orthogonal groups).
  virtual void allReduceSumInGroup(const std::string& key, int64_t ipu, float* data, size_t count,
                                   int64_t groupSize, int64_t stride) = 0;
  // This replica's index among all the replicas (sharded tensors: which
  // shard it holds).
  virtual int64_t replicaIndex() const = 0;
};

} // namespace popsim::kernels
