#pragma once

// How a replicated call's combined batch is laid out, as PopTorch lays it
// out: dimension 0 of every input holds, for each of the call's micro-batch
// steps (deviceIterations x gradientAccumulation), one micro-batch per input
// part (a replica, or an input group of replicas), part by part. Each replica
// takes its part's micro-batches of every step; outputs come back in the same
// order, every replica's returned slots side by side (a scalar per replica is
// stacked into a vector).

#include "host/replication.h"
#include "host/session_options.h"
#include "runtime/tensor_view.h"

#include <cstdint>
#include <vector>

namespace popsim::runtime {
class Executable;
}

namespace popsim::host {

struct CallLayout {
  int64_t steps = 1; // micro-batch steps per call
  // The input part each local replica takes (replicas of an input group share theirs).
  std::vector<int64_t> inputPartOf{0};
  // Per output of the program: the micro-batches (or iterations) it returns.
  std::vector<int64_t> outputSlots;

  int64_t replicas() const { return static_cast<int64_t>(inputPartOf.size()); }
  int64_t inputParts() const;

  // The type of one replica's share of a call's input, and of a call's
  // output made of every replica's `replicaOutput`.
  ir::TensorType replicaInputType(const ir::TensorType& callInput) const;
  ir::TensorType callOutputType(const ir::TensorType& replicaOutput) const;
  // Copies replica `replica`'s share of `callInput` to `destination` (a
  // buffer of replicaInputType's bytes).
  void copyReplicaInput(const runtime::TensorView& callInput, int64_t replica,
                        void* destination) const;
  // Copies replica `replica`'s output `output` (of type `replicaType`) into
  // its places in the call's output.
  void copyReplicaOutput(size_t output, const void* source, const ir::TensorType& replicaType,
                         int64_t replica, const runtime::TensorView& callOutput) const;
};

// The layout of a call of `executable` for the session: its steps, the
// replicas' input parts and each output's slots (the output mode's; input
// updates return every micro-batch).
CallLayout callLayoutOf(const SessionOptions& options, bool training,
                        const Replication& replication, const runtime::Executable& executable);

} // namespace popsim::host
