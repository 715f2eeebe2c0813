#pragma once

#include "ir/node.h"
#include "kernels/kernel.h"

#include <memory>
#include <optional>
#include <vector>

namespace popsim::kernels {

class ReplicaCollectives;

// What a kernel is built from: the node and where its operands live.
struct KernelRequest {
  const ir::Node& node;
  std::vector<BoundTensor> inputs;
  std::vector<BoundTensor> outputs;
  const dnnl::engine& engine;
  // Incremented whenever weights are written to the device. Kernels that keep
  // a transformed copy of a weight (e.g. in oneDNN's blocked layout) derive it
  // again when this changes. Null: weights never change after compilation.
  const uint64_t* weightsVersion = nullptr;
  // The program trains. Convolutions then use oneDNN's training propagation,
  // as eager PyTorch always does: Debian's PyTorch links the same libdnnl,
  // which then picks the kernels PyTorch runs, so results are bit-identical
  // to eager's and training trajectories do not drift apart through ReLU
  // kinks. Inference keeps the (faster) inference kernels.
  bool training = false;
  // Where the runtime puts the collectives of the replica this program runs
  // as (null until it joins its replicas): replica_all_reduce reads it.
  ReplicaCollectives* const* collectives = nullptr;
  // Stochastic rounding of float16 results (Precision.enableStochasticRounding):
  // the node's random key, from the seed and its place in the program.
  std::optional<uint64_t> stochasticRoundingKey{};
  // Precision.enableFloatingPointExceptions: infinities or NaN the node makes
  // from finite operands are an error (kernels/floating_point_checks.h).
  bool floatingPointExceptions = false;
  // Precision.setPartialsType(torch.half): float16 matmuls and convolutions
  // sum their products in float16 partials (reference/partial_sums.h).
  bool halfPartials = false;
};

// Builds the kernel of a node: a oneDNN primitive where one fits, otherwise
// the reference kernel. Returns nullptr for views (reshape), which need no
// work. Primitive creation goes through oneDNN's primitive cache, so layers
// with the same shapes (and recompiles) reuse generated code.
std::unique_ptr<Kernel> createKernel(const KernelRequest& request);

} // namespace popsim::kernels
