#pragma once

#include "kernels/kernel_factory.h"

#include <memory>

namespace popsim::kernels {

// replica_all_reduce: the operand copied to the output, which the replicas'
// collectives (KernelRequest::collectives) then sum in place.
std::unique_ptr<Kernel> createReplicaAllReduceKernel(const KernelRequest& request);

} // namespace popsim::kernels
