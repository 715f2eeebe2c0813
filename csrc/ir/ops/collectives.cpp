#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// replica_all_reduce(X) {key, replicas, system_ipus} -> Y: the element-wise
// sum of X over the `replicas` replicas of a replicated training program (Y
// has X's type). Every replica runs the same op under the same `key`, which
// pairs the contributions; `system_ipus` (all the job's IPUs) tells the cost
// model whether the ring leaves the chassis.
std::vector<TensorType> inferReplicaAllReduce(const std::vector<TensorType>& inputs,
                                              const Attributes& attrs) {
  requireDType(inputs[0], DType::Float32, "replica_all_reduce's input");
  POPSIM_CHECK(attrs.getInt("replicas") >= 2, ErrorKind::Compilation,
               "replica_all_reduce needs at least 2 replicas, got ", attrs.getInt("replicas"), ".");
  POPSIM_CHECK(attrs.getInt("system_ipus") >= attrs.getInt("replicas"), ErrorKind::Compilation,
               "replica_all_reduce: system_ipus ", attrs.getInt("system_ipus"),
               " is fewer than its replicas ", attrs.getInt("replicas"), ".");
  return {inputs[0]};
}

} // namespace

void registerCollectiveOps(OpRegistry& registry) {
  registry.add(
      OpKind::ReplicaAllReduce, 1, 1, {"input"},
      {{"key", AttrType::String}, {"replicas", AttrType::Int}, {"system_ipus", AttrType::Int}},
      inferReplicaAllReduce);
}

} // namespace popsim::ir::ops
