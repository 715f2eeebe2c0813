#pragma once

// How a call's inputs split into micro-batches: dimension 0 of every input
// holds deviceIterations x gradientAccumulation x (the replicas that take
// inputs of their own) micro-batches, stacked. Compiling traces one of them;
// a replicated call gives each replica its share (replicated_program.h).

#include "host/session_options.h"

#include <cstdint>
#include <string>
#include <vector>

namespace popsim::host {

struct BatchSplit {
  int64_t deviceIterations = 1;
  int64_t gradientAccumulation = 1;
  // Distinct input micro-batches per step (replicas, or input groups of them).
  int64_t replicaParts = 1;
  std::string replicaLabel = "replicationFactor";

  // Micro-batches of each input per call.
  int64_t factor() const { return deviceIterations * gradientAccumulation * replicaParts; }
  // The shape of one micro-batch of input `name`, whose call shape is
  // `shape`. A 0-d input (only when a call has one micro-batch per replica)
  // is the same in every micro-batch. Throws InvalidInput naming the input
  // for an empty one, a 0-d one of several micro-batches, and a dimension 0
  // that does not split.
  std::vector<int64_t> microBatchShape(const std::string& name,
                                       const std::vector<int64_t>& shape) const;
  // What a call's batch is made of, for messages: "micro-batch 4 x
  // deviceIterations 2 x gradientAccumulation 1 (x replicationFactor 2)".
  std::string batchText(int64_t microBatch) const;
  // What the split needs, for messages.
  std::string explanation() const;
};

BatchSplit batchSplitOf(const SessionOptions& options);

// The micro-batches of every local replica that a call of the session holds
// (deviceIterations x replicationFactor, x gradientAccumulation in
// training): what sizeJob repeats one replica's micro-batch to.
int64_t microBatchesOfACall(const SessionOptions& options, bool training);

} // namespace popsim::host
