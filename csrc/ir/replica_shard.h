#pragma once

#include "ir/tensor_type.h"

#include <cstdint>

namespace popsim::ir {

// Replicated tensor sharding: one replica's shard of a tensor of `numel`
// elements, flattened and padded with zeros to a multiple of the replicas,
// holds ceil(numel / replicas) elements; replica r holds elements
// [r s, (r + 1) s) of the flat tensor.
inline int64_t replicaShardElements(int64_t numel, int64_t replicas) {
  return (numel + replicas - 1) / replicas;
}

// The type of one replica's shard of a tensor of `whole` type.
inline TensorType replicaShardType(const TensorType& whole, int64_t replicas) {
  return {whole.dtype, {replicaShardElements(whole.numel(), replicas)}};
}

} // namespace popsim::ir
