#include "ir/ops/op_registry.h"

#include "ir/ops/type_checks.h"
#include "ir/replica_shard.h"
#include <algorithm>

namespace popsim::ir::ops {
namespace {

// Every replica of a replicated training program runs the same collective op
// under the same `key`, which pairs their contributions. `replicas` counts
// them; `system_ipus` (all the job's IPUs) tells the cost model whether the
// ring leaves the chassis.
// `group_stride` 0 pairs all the replicas; a replica_all_reduce of a
// replica-grouped variable sums within groups of `replicas` replicas instead:
// neighbours (stride 1) or every stride-th replica.
void checkReplicas(const TensorType& input, const Attributes& attrs, const char* op) {
  requireFloat(input, std::string(op) + "'s input");
  const int64_t stride = attrs.getInt("group_stride");
  POPSIM_CHECK(stride == 0 || (stride > 0 && std::string(op) == "replica_all_reduce"),
               ErrorKind::Compilation, op, ": group_stride ", stride,
               " (only replica_all_reduce sums within groups, with a positive stride).");
  POPSIM_CHECK(attrs.getInt("replicas") >= 2, ErrorKind::Compilation, op,
               " needs at least 2 replicas, got ", attrs.getInt("replicas"), ".");
  POPSIM_CHECK(attrs.getInt("system_ipus") >= attrs.getInt("replicas"), ErrorKind::Compilation, op,
               ": system_ipus ", attrs.getInt("system_ipus"), " is fewer than its replicas ",
               attrs.getInt("replicas"), ".");
}

// replica_all_reduce(X) -> Y: the element-wise sum of X over the replicas.
std::vector<TensorType> inferAllReduce(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  checkReplicas(inputs[0], attrs, "replica_all_reduce");
  return {inputs[0]};
}

// replica_reduce_scatter(X) -> S: this replica's shard of the sum of X over
// the replicas (replica r holds elements [r s, (r + 1) s) of the flat sum).
std::vector<TensorType> inferReduceScatter(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  checkReplicas(inputs[0], attrs, "replica_reduce_scatter");
  return {replicaShardType(inputs[0], attrs.getInt("replicas"))};
}

// replica_shard(X) -> S: this replica's shard of its own X (no exchange).
std::vector<TensorType> inferShard(const std::vector<TensorType>& inputs, const Attributes& attrs) {
  checkReplicas(inputs[0], attrs, "replica_shard");
  return {replicaShardType(inputs[0], attrs.getInt("replicas"))};
}

// replica_all_gather(S) {shape} -> X: every replica's shard joined in
// replica order, without the padding, as a tensor of `shape`.
std::vector<TensorType> inferAllGather(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  checkReplicas(inputs[0], attrs, "replica_all_gather");
  requireRank(inputs[0], 1, "replica_all_gather's shard");
  const Shape& shape = attrs.getInts("shape");
  TensorType whole{inputs[0].dtype, shape};
  POPSIM_CHECK(inputs[0].shape[0] == replicaShardElements(whole.numel(), attrs.getInt("replicas")),
               ErrorKind::Compilation, "replica_all_gather: a shard of ", inputs[0].shape[0],
               " elements does not make ", shapeToString(shape), " over ", attrs.getInt("replicas"),
               " replicas.");
  return {whole};
}

const std::vector<AttrSpec> kCollectiveAttrs = {{"key", AttrType::String},
                                                {"replicas", AttrType::Int},
                                                {"system_ipus", AttrType::Int},
                                                {"group_stride", AttrType::Int}};

// All the replicas' IPUs sync and a ring moves the bytes (the larger of
// what goes in and comes out); reducing, each IPU adds the chunks it gets.
OpWork collectiveWork(const Node& node) {
  OpWork work;
  switch (node.kind()) {
  case OpKind::ReplicaAllReduce: work.collective = OpWork::Collective::AllReduce; break;
  case OpKind::ReplicaReduceScatter: work.collective = OpWork::Collective::ReduceScatter; break;
  default: work.collective = OpWork::Collective::AllGather; break;
  }
  for (const Value* input : node.inputs())
    work.collectiveBytes += input->type().bytes();
  work.collectiveBytes = std::max(work.collectiveBytes, node.output()->type().bytes());
  work.replicas = node.attrs().getInt("replicas");
  work.systemIpus = node.attrs().getInt("system_ipus");
  work.collectiveReduces = node.kind() != OpKind::ReplicaAllGather;
  return work;
}

} // namespace

void registerCollectiveOps(OpRegistry& registry) {
  registry.add(OpKind::ReplicaAllReduce, 1, 1, {"input"}, kCollectiveAttrs, inferAllReduce);
  registry.add(OpKind::ReplicaReduceScatter, 1, 1, {"input"}, kCollectiveAttrs, inferReduceScatter);
  registry.add(OpKind::ReplicaShard, 1, 1, {"input"}, kCollectiveAttrs, inferShard);
  std::vector<AttrSpec> gather = kCollectiveAttrs;
  gather.push_back({"shape", AttrType::Ints});
  registry.add(OpKind::ReplicaAllGather, 1, 1, {"shard"}, gather, inferAllGather);
  registry.setWork(OpKind::ReplicaAllReduce, collectiveWork);
  registry.setWork(OpKind::ReplicaReduceScatter, collectiveWork);
  registry.setWork(OpKind::ReplicaAllGather, collectiveWork);
  registry.setWork(OpKind::ReplicaShard, work::movement);
}

} // namespace popsim::ir::ops
