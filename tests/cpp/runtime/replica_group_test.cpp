// Replicas meeting in a ReplicaGroup, each on its own thread as replicated
// executables run: every replica gets the same sum, added in replica order;
// a failure wakes the replicas that wait for it.

#include "runtime/replica_group.h"

#include "common/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace popsim {
namespace {

using runtime::ReplicaGroup;

TEST(ReplicaGroupTest, EveryReplicaGetsTheSumInReplicaOrder) {
  constexpr int kReplicas = 3;
  auto group = std::make_shared<ReplicaGroup>(kReplicas);
  // 1e8 + 1 - 1e8 in float: replica order gives 0 (1e8 + 1 rounds to 1e8)
  // where another order would give 1.
  std::vector<std::vector<float>> data = {{1e8f, 1.0f}, {1.0f, 2.0f}, {-1e8f, 3.0f}};
  std::vector<std::thread> threads;
  for (int r = kReplicas - 1; r >= 0; --r) { // the last replica arrives first
    threads.emplace_back([&, r] {
      auto member = group->member(r);
      member->allReduceSum("w", 0, data[static_cast<size_t>(r)].data(), 2);
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (const auto& values : data) {
    EXPECT_EQ(values[0], (1e8f + 1.0f) + -1e8f);
    EXPECT_EQ(values[1], 6.0f);
  }
}

TEST(ReplicaGroupTest, KeysAndIpusMeetSeparatelyAndTheCrossProcessSumRunsOnce) {
  int crossProcessCalls = 0;
  auto group = std::make_shared<ReplicaGroup>(2, [&](const std::string&, int64_t,
                                                     const ReplicaGroup::JobGroup* jobGroup,
                                                     float* data, size_t count) {
    EXPECT_EQ(jobGroup, nullptr); // across every process
    ++crossProcessCalls;
    for (size_t i = 0; i < count; ++i)
      data[i] *= 10.0f; // as if ten processes had the same sum
  });
  // Each replica's IPUs run on threads of their own: IPU0 reduces "a", IPU1 "b".
  std::vector<float> a0 = {1}, b0 = {2}, a1 = {3}, b1 = {4};
  std::vector<std::thread> ipus;
  const auto reduce = [&](int64_t replica, const char* key, int64_t ipu, float* value) {
    ipus.emplace_back([&group, replica, key, ipu, value] {
      group->member(replica)->allReduceSum(key, ipu, value, 1);
    });
  };
  reduce(1, "b", 1, b1.data());
  reduce(0, "a", 0, a0.data());
  reduce(1, "a", 0, a1.data());
  reduce(0, "b", 1, b0.data());
  for (auto& thread : ipus)
    thread.join();
  EXPECT_EQ(a0[0], 40.0f);
  EXPECT_EQ(a1[0], 40.0f);
  EXPECT_EQ(b0[0], 60.0f);
  EXPECT_EQ(b1[0], 60.0f);
  EXPECT_EQ(crossProcessCalls, 2);
}

// A replica that leaves a meeting first may come back under the same key
// (the next micro-batch's gather) while the others are still leaving: each
// round must still pair the replicas' own round.
TEST(ReplicaGroupTest, RoundsUnderOneKeyFollowEachOther) {
  constexpr int kReplicas = 3;
  constexpr int kRounds = 2000;
  auto group = std::make_shared<ReplicaGroup>(kReplicas);
  std::vector<int> wrong(kReplicas, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kReplicas; ++r) {
    threads.emplace_back([&, r] {
      auto member = group->member(r);
      for (int round = 0; round < kRounds; ++round) {
        float value = static_cast<float>(round * 10 + r);
        member->allReduceSum("w/gather", 0, &value, 1);
        if (value != static_cast<float>(round * 30 + 3)) ++wrong[static_cast<size_t>(r)];
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(wrong, std::vector<int>(kReplicas, 0));
}

TEST(ReplicaGroupTest, GroupedVariablesSumWithinTheirGroupOnly) {
  constexpr int kReplicas = 4;
  auto group = std::make_shared<ReplicaGroup>(kReplicas);
  // Replica r holds r + 1. Consecutive groups of 2 are {0, 1} and {2, 3};
  // groups of 2 with stride 2 (Orthogonal) are {0, 2} and {1, 3}.
  for (const auto& [stride, sums] :
       std::vector<std::pair<int64_t, std::vector<float>>>{{1, {3, 3, 7, 7}}, {2, {4, 6, 4, 6}}}) {
    std::vector<float> data = {1, 2, 3, 4};
    std::vector<std::thread> threads;
    for (int r = 0; r < kReplicas; ++r) {
      threads.emplace_back([&, r, stride = stride] {
        group->member(r)->allReduceSumInGroup("w", 0, &data[static_cast<size_t>(r)], 1, 2, stride);
      });
    }
    for (auto& thread : threads)
      thread.join();
    EXPECT_EQ(data, sums) << "stride " << stride;
  }
}

// Process 1 of 2 holds replicas 2 and 3 of the job's 4. Consecutive groups
// of 2 ({2, 3}) lie within it; Orthogonal ones ({0, 2}, {1, 3}) have one
// member here, which sums with the other process's member only.
TEST(ReplicaGroupTest, GroupsSpanningProcessesSumAcrossThem) {
  std::mutex crossedMutex; // the two groups' sums run on different threads
  std::vector<std::string> crossed;
  auto group = std::make_shared<ReplicaGroup>(
      2,
      [&](const std::string& key, int64_t, const ReplicaGroup::JobGroup* jobGroup, float* data,
          size_t) {
        ASSERT_NE(jobGroup, nullptr);
        std::lock_guard<std::mutex> lock(crossedMutex);
        crossed.push_back(key + ":" + std::to_string(jobGroup->index));
        *data += 100.0f * static_cast<float>(jobGroup->index + 1); // the other process's member
      },
      2, 4);
  for (const int64_t stride : {1, 2}) {
    std::vector<float> data = {3, 4};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        group->member(r)->allReduceSumInGroup("w" + std::to_string(stride), 0,
                                              &data[static_cast<size_t>(r)], 1, 2, stride);
      });
    }
    for (auto& thread : threads)
      thread.join();
    if (stride == 1) {
      EXPECT_EQ(data, (std::vector<float>{7, 7}));
    } else {
      EXPECT_EQ(data, (std::vector<float>{103, 204})); // job replicas 2 and 3: groups 0 and 1
    }
  }
  std::sort(crossed.begin(), crossed.end());
  EXPECT_EQ(crossed, (std::vector<std::string>{"w2:0", "w2:1"}));
}

TEST(ReplicaGroupTest, AFailedReplicaStopsTheWaitingOnesUntilReset) {
  auto group = std::make_shared<ReplicaGroup>(2);
  std::vector<float> value = {1};
  std::string message;
  std::thread waiting([&] {
    try {
      group->member(0)->allReduceSum("layer.weight", 0, value.data(), 1);
    } catch (const CoreError& error) {
      message = error.what();
    }
  });
  group->abort("replica 1: nll_loss target 7 is out of range");
  waiting.join();
  EXPECT_NE(message.find("replica 0 stopped in the all-reduce of 'layer.weight' because another "
                         "replica failed: replica 1: nll_loss target 7"),
            std::string::npos)
      << message;
  EXPECT_THROW(group->member(1)->allReduceSum("x", 0, value.data(), 1), CoreError);
  group->reset();
  std::thread other([&] {
    std::vector<float> mine = {2};
    group->member(1)->allReduceSum("x", 0, mine.data(), 1);
  });
  group->member(0)->allReduceSum("x", 0, value.data(), 1);
  other.join();
  EXPECT_EQ(value[0], 3.0f);
}

} // namespace
} // namespace popsim
