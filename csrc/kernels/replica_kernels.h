#pragma once

#include "kernels/kernel_factory.h"

#include <memory>

namespace popsim::kernels {

// The collective ops of replicated training (replica_all_reduce,
// replica_reduce_scatter, replica_all_gather, replica_shard, and LAMB's
// sharded update, lamb_update_sharded), which reach the other replicas
// through KernelRequest::collectives.
std::unique_ptr<Kernel> createReplicaKernel(const KernelRequest& request);

} // namespace popsim::kernels
