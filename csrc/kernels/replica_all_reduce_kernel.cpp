#include "kernels/replica_all_reduce_kernel.h"

#include "common/check.h"
#include "kernels/replica_collectives.h"

#include <cstring>
#include <string>

namespace popsim::kernels {
namespace {

class ReplicaAllReduceKernel : public Kernel {
public:
  explicit ReplicaAllReduceKernel(const KernelRequest& request)
      : input_(request.inputs[0].data), output_(static_cast<float*>(request.outputs[0].data)),
        count_(static_cast<size_t>(request.outputs[0].type.numel())),
        key_(request.node.attrs().getString("key")), ipu_(request.node.placement().ipu),
        replicas_(request.node.attrs().getInt("replicas")), collectives_(request.collectives) {}

  void run(dnnl::stream&) override {
    ReplicaCollectives* collectives = collectives_ != nullptr ? *collectives_ : nullptr;
    POPSIM_CHECK(collectives != nullptr, ErrorKind::Execution, "replica_all_reduce of '", key_,
                 "': the program sums its gradients over ", replicas_,
                 " replicas, but this copy of it runs alone. Run it through the model's "
                 "executor, which starts every replica.");
    if (input_ != output_) std::memcpy(output_, input_, count_ * sizeof(float));
    collectives->allReduceSum(key_, ipu_, output_, count_);
  }
  std::string implementation() const override { return "host:all-reduce"; }

private:
  const void* input_;
  float* output_;
  size_t count_;
  std::string key_;
  int64_t ipu_;
  int64_t replicas_;
  ReplicaCollectives* const* collectives_;
};

} // namespace

std::unique_ptr<Kernel> createReplicaAllReduceKernel(const KernelRequest& request) {
  return std::make_unique<ReplicaAllReduceKernel>(request);
}

} // namespace popsim::kernels
