#include "kernels/replica_kernels.h"

#include "common/check.h"
#include "kernels/reference/lamb.h"
#include "kernels/replica_collectives.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace popsim::kernels {
namespace {

// The host computes what the simulated ring would: reduce-scatter and
// all-gather go through the replicas' all-reduce on a padded buffer of
// replicas x shard elements, so every replica ends with the same bits as an
// all-reduce gives (the simulated clock charges each collective its own
// traffic). The operand's element count is `count`; a shard has `shard`.
class ReplicaKernel : public Kernel {
public:
  explicit ReplicaKernel(const KernelRequest& request)
      : kind_(request.node.kind()), input_(static_cast<const float*>(request.inputs[0].data)),
        output_(static_cast<float*>(request.outputs[0].data)),
        inputCount_(static_cast<size_t>(request.inputs[0].type.numel())),
        outputCount_(static_cast<size_t>(request.outputs[0].type.numel())),
        key_(request.node.attrs().getString("key")), ipu_(request.node.placement().ipu),
        replicas_(request.node.attrs().getInt("replicas")),
        groupStride_(request.node.attrs().getInt("group_stride")),
        collectives_(request.collectives) {
    if (kind_ == ir::OpKind::ReplicaReduceScatter || kind_ == ir::OpKind::ReplicaAllGather) {
      const size_t shard = kind_ == ir::OpKind::ReplicaReduceScatter ? outputCount_ : inputCount_;
      padded_.resize(shard * static_cast<size_t>(replicas_));
    }
  }

  void run(dnnl::stream&) override {
    ReplicaCollectives& replicas = collectives();
    switch (kind_) {
    case ir::OpKind::ReplicaAllReduce:
      if (input_ != output_) std::memcpy(output_, input_, inputCount_ * sizeof(float));
      if (groupStride_ == 0) {
        replicas.allReduceSum(key_, ipu_, output_, outputCount_);
      } else {
        replicas.allReduceSumInGroup(key_, ipu_, output_, outputCount_, replicas_, groupStride_);
      }
      return;
    case ir::OpKind::ReplicaReduceScatter: {
      std::copy(input_, input_ + inputCount_, padded_.begin());
      std::fill(padded_.begin() + static_cast<std::ptrdiff_t>(inputCount_), padded_.end(), 0.0f);
      replicas.allReduceSum(key_, ipu_, padded_.data(), padded_.size());
      const float* mine = padded_.data() + shardOffset(replicas, outputCount_);
      std::copy(mine, mine + outputCount_, output_);
      return;
    }
    case ir::OpKind::ReplicaAllGather: {
      std::fill(padded_.begin(), padded_.end(), 0.0f);
      std::copy(input_, input_ + inputCount_,
                padded_.begin() + static_cast<std::ptrdiff_t>(shardOffset(replicas, inputCount_)));
      replicas.allReduceSum(key_, ipu_, padded_.data(), padded_.size());
      std::copy(padded_.begin(), padded_.begin() + static_cast<std::ptrdiff_t>(outputCount_),
                output_);
      return;
    }
    case ir::OpKind::ReplicaShard: {
      const size_t offset = shardOffset(replicas, outputCount_);
      const size_t available = offset < inputCount_ ? inputCount_ - offset : 0;
      const size_t copied = std::min(available, outputCount_);
      std::copy(input_ + offset, input_ + offset + copied, output_);
      std::fill(output_ + copied, output_ + outputCount_, 0.0f);
      return;
    }
    default: break;
    }
    POPSIM_ASSERT(false, "no replica kernel for ", ir::opKindName(kind_), ".");
  }
  std::string implementation() const override { return "host:replicas"; }

private:
  ReplicaCollectives& collectives() const {
    ReplicaCollectives* collectives = collectives_ != nullptr ? *collectives_ : nullptr;
    POPSIM_CHECK(collectives != nullptr, ErrorKind::Execution, ir::opKindName(kind_), " of '", key_,
                 "': the program shares its optimizer step with ", replicas_,
                 " replicas, but this copy of it runs alone. Run it through the model's "
                 "executor, which starts every replica.");
    return *collectives;
  }
  size_t shardOffset(const ReplicaCollectives& replicas, size_t shard) const {
    return static_cast<size_t>(replicas.replicaIndex()) * shard;
  }

  ir::OpKind kind_;
  const float* input_;
  float* output_;
  size_t inputCount_;
  size_t outputCount_;
  std::string key_;
  int64_t ipu_;
  int64_t replicas_;    // in the collective: all of them, or one group's
  int64_t groupStride_; // 0: all the replicas; else a group's, as the op says
  ReplicaCollectives* const* collectives_;
  std::vector<float> padded_;
};

// lamb_update_sharded: LAMB's first pass on this replica's shard, the two
// squared norms summed over the replicas (in float, replica order), then
// the second pass with the whole parameter's trust ratio.
class ShardedLambKernel : public Kernel {
public:
  explicit ShardedLambKernel(const KernelRequest& request)
      : node_(request.node), key_(request.node.attrs().getString("key")),
        ipu_(request.node.placement().ipu), collectives_(request.collectives),
        update_(static_cast<size_t>(request.inputs[0].type.numel())) {
    for (const BoundTensor& input : request.inputs) {
      inputs_.push_back(input.data);
    }
  }

  void run(dnnl::stream&) override {
    ReplicaCollectives* collectives = collectives_ != nullptr ? *collectives_ : nullptr;
    POPSIM_CHECK(collectives != nullptr, ErrorKind::Execution, "lamb_update_sharded of '", key_,
                 "': the program shards its optimizer state over replicas, but this copy of it "
                 "runs alone. Run it through the model's executor, which starts every replica.");
    const reference::LambSquares mine = reference::lambDirection(node_, inputs_, update_.data());
    float squares[2] = {static_cast<float>(mine.weight), static_cast<float>(mine.update)};
    collectives->allReduceSum(key_, ipu_, squares, 2);
    reference::lambApply(node_, inputs_, update_.data(), {squares[0], squares[1]});
  }
  std::string implementation() const override { return "host:replicas"; }

private:
  const ir::Node& node_;
  std::string key_;
  int64_t ipu_;
  ReplicaCollectives* const* collectives_;
  reference::Inputs inputs_;
  std::vector<float> update_;
};

} // namespace

std::unique_ptr<Kernel> createReplicaKernel(const KernelRequest& request) {
  if (request.node.kind() == ir::OpKind::LambUpdateSharded) {
    return std::make_unique<ShardedLambKernel>(request);
  }
  return std::make_unique<ReplicaKernel>(request);
}

} // namespace popsim::kernels
