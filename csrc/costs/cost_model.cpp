#include "costs/cost_model.h"

#include "common/check.h"
#include "ir/op_schema.h"

#include <algorithm>
#include <cmath>

namespace popsim::costs {
namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// One vectorised pass over `elements` spread over all tiles (v values per vector).
uint64_t elementwisePassCycles(uint64_t elements, const device::ChipSpec& chip,
                               ir::DType dtype = ir::DType::Float32) {
  const uint64_t perTile = ceilDiv(elements, static_cast<uint64_t>(chip.tiles));
  // The tile's 64-bit vector unit takes two float32 or four float16 values.
  const uint64_t vectorWidth = dtype == ir::DType::Float16 ? 4 : 2;
  const uint64_t perThread = ceilDiv(perTile, 6 * vectorWidth);
  return 6 * (58 + 3 * perThread) + 11;
}

uint64_t exchangeCycles(uint64_t bytes, const device::ChipSpec& chip) {
  return ceilDiv(bytes, static_cast<uint64_t>(chip.tiles * chip.exchangeBytesPerTileCycle));
}

// The AMP units' rate for the operands' dtype: float16 multiplies four times
// as fast as float32 on Mk2 (64 against 16 MACs per tile-cycle).
uint64_t macCycles(uint64_t macs, const device::ChipSpec& chip, ir::DType dtype) {
  const int64_t perTile =
      dtype == ir::DType::Float16 ? chip.fp16MacsPerTileCycle : chip.fp32MacsPerTileCycle;
  const double perCycle = static_cast<double>(chip.tiles * perTile) * kMatMulEfficiency;
  return static_cast<uint64_t>(std::ceil(static_cast<double>(macs) / perCycle));
}

uint64_t inputBytes(const ir::Node& node) {
  uint64_t bytes = 0;
  for (const ir::Value* input : node.inputs()) {
    bytes += input->type().bytes();
  }
  return bytes;
}

// Multiply-accumulates of the ops with planned temporaries. A convolution's
// two gradients do as many as the convolution itself (each pairs every
// output-gradient element with every tap of its window), and so does the
// weight gradient of a linear layer.
uint64_t matmulMacs(const ir::Node& node) {
  const ir::TensorType& out = node.output()->type();
  switch (node.kind()) {
  case ir::OpKind::Convolution:
  case ir::OpKind::ConvolutionGradInput:
  case ir::OpKind::ConvolutionGradWeight: {
    // Per element of the convolution's output: input channels per group x kernel taps.
    const bool weightGradient = node.kind() == ir::OpKind::ConvolutionGradWeight;
    const ir::Shape& w = weightGradient ? out.shape : node.input(1)->type().shape;
    const ir::TensorType& convOutput =
        node.kind() == ir::OpKind::Convolution ? out : node.input(weightGradient ? 1 : 0)->type();
    return static_cast<uint64_t>(convOutput.numel() * (ir::elementCount(w) / w[0]));
  }
  case ir::OpKind::Linear:
    return static_cast<uint64_t>(out.numel() * node.input(1)->type().shape[1]);
  case ir::OpKind::MatMul:
    return static_cast<uint64_t>(out.numel() * node.input(0)->type().shape.back());
  case ir::OpKind::LinearGradWeight: // dW[N, K] sums over every row of dY and X
    return static_cast<uint64_t>(node.input(0)->type().numel() * out.shape[1]);
  default: return 0;
  }
}

// Passes over the data for ops costed as elementwise work.
uint64_t elementPasses(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::Relu:
  case ir::OpKind::Affine:
  case ir::OpKind::Add:
  case ir::OpKind::Sub:
  case ir::OpKind::Mul:
  case ir::OpKind::Div:
  case ir::OpKind::ReduceSum:
  case ir::OpKind::ReduceMean: return 1;
  case ir::OpKind::Sigmoid:
  case ir::OpKind::Tanh:
  case ir::OpKind::Exp:
  case ir::OpKind::Log:
  case ir::OpKind::Sqrt:
  case ir::OpKind::Pointwise: // a transcendental or a few comparisons per element
  case ir::OpKind::BatchNorm: return 2;
  case ir::OpKind::Gelu:
  case ir::OpKind::Softmax:
  case ir::OpKind::LogSoftmax: return 3;
  case ir::OpKind::LayerNorm: return 4;
  case ir::OpKind::BatchNormTrain:
  case ir::OpKind::LayerNormTrain:
  case ir::OpKind::RmspropUpdate: return 4;
  case ir::OpKind::BatchNormGrad:
  case ir::OpKind::LayerNormGrad:
  case ir::OpKind::AdamUpdate: return 6;
  case ir::OpKind::LambUpdate:
  case ir::OpKind::LambUpdateSharded: return 9; // Adam's work, two norms and a second pass
  case ir::OpKind::SgdUpdate:
  case ir::OpKind::ActivationGrad:
  case ir::OpKind::SoftmaxGrad:
  case ir::OpKind::LogSoftmaxGrad: return 2;
  default: return 1;
  }
}

} // namespace

OpCost estimateOpCost(const ir::Node& node, const device::ChipSpec& chip,
                      const memory::OpTemporaries& temporaries) {
  OpCost cost;
  if (ir::isViewOp(node.kind())) {
    return cost; // a view: no superstep at all
  }
  cost.syncCycles = syncCycles(1, chip);
  // The data an op produces: its first output, or for in-place updates the
  // variable it writes.
  const ir::TensorType& produced =
      node.outputs().empty() ? node.input(0)->type() : node.output()->type();
  const uint64_t outElements = static_cast<uint64_t>(produced.numel());
  const uint64_t outBytes = produced.bytes();
  if (memory::hasPlannedTemporaries(node)) { // matmuls and convolutions
    const uint64_t extraPasses = temporaries.passes - 1;
    cost.syncCycles += extraPasses * syncCycles(1, chip);
    cost.exchangeCycles = exchangeCycles(inputBytes(node), chip) +
                          extraPasses * exchangeCycles(temporaries.smallerOperandBytes, chip);
    cost.computeCycles = macCycles(matmulMacs(node), chip, node.input(0)->type().dtype);
    return cost;
  }
  switch (node.kind()) {
  case ir::OpKind::MaxPool2dGrad:
    // A scatter: clear dX, then one add per dY element.
    cost.exchangeCycles = exchangeCycles(inputBytes(node), chip);
    cost.computeCycles = elementwisePassCycles(
        outElements + static_cast<uint64_t>(node.input(0)->type().numel()), chip);
    break;
  case ir::OpKind::MaxPool2d:
  case ir::OpKind::MaxPool2dTrain:
  case ir::OpKind::AvgPool2d:
  case ir::OpKind::AvgPool2dGrad: {
    const auto& kernel = node.attrs().getInts("kernel");
    cost.exchangeCycles = exchangeCycles(node.input(0)->type().bytes(), chip);
    cost.computeCycles =
        elementwisePassCycles(outElements * static_cast<uint64_t>(kernel[0] * kernel[1]), chip);
    break;
  }
  case ir::OpKind::PrintTensor: // the tensor streams to the host, which prints it
    cost.exchangeCycles = hostTransferCycles(outBytes, chip);
    break;
  case ir::OpKind::HostCall: { // inputs stream to the host, which computes; results stream back
    uint64_t bytes = 0;
    for (const ir::Value* value : node.inputs())
      bytes += static_cast<uint64_t>(value->type().bytes());
    for (const ir::Value* value : node.outputs())
      bytes += static_cast<uint64_t>(value->type().bytes());
    cost.exchangeCycles = hostTransferCycles(bytes, chip);
    break;
  }
  case ir::OpKind::Cast: // a conversion per element, on the tiles that hold them
    cost.computeCycles = elementwisePassCycles(outElements, chip);
    break;
  case ir::OpKind::AdaptiveAvgPool2d:
  case ir::OpKind::AdaptiveMaxPool2d:
    cost.exchangeCycles = exchangeCycles(node.input(0)->type().bytes(), chip);
    cost.computeCycles =
        elementwisePassCycles(static_cast<uint64_t>(node.input(0)->type().numel()), chip);
    break;
  case ir::OpKind::Permute:
  case ir::OpKind::Slice:
  case ir::OpKind::Concat:
  case ir::OpKind::Embedding:
  case ir::OpKind::Broadcast:
  case ir::OpKind::SliceGrad:
  case ir::OpKind::SliceUpdate:
  case ir::OpKind::Overwrite:
  case ir::OpKind::EmbeddingGrad:
  case ir::OpKind::IndexSelect:
  case ir::OpKind::IndexAdd:
  case ir::OpKind::Gather:
  case ir::OpKind::Scatter:
  case ir::OpKind::ScatterReduce:
  case ir::OpKind::Assign: cost.exchangeCycles = exchangeCycles(outBytes, chip); break;
  case ir::OpKind::ReplicaAllReduce:
  case ir::OpKind::ReplicaReduceScatter:
  case ir::OpKind::ReplicaAllGather: {
    // All the replicas' IPUs sync and the ring moves the bytes; reducing,
    // each IPU adds the (replicas - 1) chunks it receives.
    const int64_t replicas = node.attrs().getInt("replicas");
    const int64_t systemIpus = node.attrs().getInt("system_ipus");
    const uint64_t bytes = std::max(inputBytes(node), outBytes);
    cost.syncCycles = syncCycles(systemIpus, chip);
    cost.exchangeCycles = node.kind() == ir::OpKind::ReplicaAllReduce
                              ? ringAllReduceCycles(bytes, replicas, systemIpus, chip)
                              : ringPhaseCycles(bytes, replicas, systemIpus, chip);
    if (node.kind() != ir::OpKind::ReplicaAllGather) {
      const uint64_t elements = bytes / sizeof(float);
      cost.computeCycles = elementwisePassCycles(
          ceilDiv(elements * static_cast<uint64_t>(replicas - 1), static_cast<uint64_t>(replicas)),
          chip);
    }
    break;
  }
  case ir::OpKind::LambUpdateSharded: {
    // LAMB on this replica's shard, and its two squared norms summed over the
    // replicas between the passes.
    const int64_t systemIpus = node.attrs().getInt("system_ipus");
    cost.computeCycles = elementPasses(node.kind()) *
                         elementwisePassCycles(static_cast<uint64_t>(node.input(0)->type().numel()),
                                               chip, node.input(0)->type().dtype);
    cost.syncCycles = syncCycles(systemIpus, chip);
    cost.exchangeCycles =
        ringAllReduceCycles(2 * sizeof(float), node.attrs().getInt("replicas"), systemIpus, chip);
    break;
  }
  case ir::OpKind::ReplicaShard: // this replica's part, moved on chip
    cost.exchangeCycles = exchangeCycles(outBytes, chip);
    break;
  case ir::OpKind::IpuCopy:
    // Over the IPU-Links between two IPUs; the receiving IPU waits for it.
    cost.syncCycles = 0;
    cost.exchangeCycles = linkTransferCycles(outBytes, 2, chip);
    break;
  case ir::OpKind::Softmax:
  case ir::OpKind::LogSoftmax:
  case ir::OpKind::LayerNorm:
  case ir::OpKind::BatchNorm:
  case ir::OpKind::ReduceSum:
  case ir::OpKind::ReduceMean:
  case ir::OpKind::BatchNormTrain:
  case ir::OpKind::LayerNormTrain:
  case ir::OpKind::BatchNormGrad:
  case ir::OpKind::LayerNormGrad:
  case ir::OpKind::SoftmaxGrad:
  case ir::OpKind::LogSoftmaxGrad:
  case ir::OpKind::NllLoss:
  case ir::OpKind::NllLossGrad:
  case ir::OpKind::CtcLoss:
  case ir::OpKind::CtcLossGrad:
  case ir::OpKind::Sort:
  case ir::OpKind::ReduceExtremum:
  case ir::OpKind::ArgExtremum:
  case ir::OpKind::ReduceProduct: {
    // Partial results cross tiles once per reduction.
    const uint64_t elements = static_cast<uint64_t>(node.input(0)->type().numel());
    cost.exchangeCycles = exchangeCycles(outBytes, chip) + syncCycles(1, chip);
    cost.computeCycles = elementPasses(node.kind()) *
                         elementwisePassCycles(elements, chip, node.input(0)->type().dtype);
    break;
  }
  default:
    cost.computeCycles =
        elementPasses(node.kind()) * elementwisePassCycles(outElements, chip, produced.dtype);
  }
  return cost;
}

namespace {
// A transfer: fixed latency, then bytes at `bytesPerSecond` on the IPU's clock.
uint64_t transferCycles(uint64_t bytes, int64_t latencyCycles, double bytesPerSecond,
                        const device::ChipSpec& chip) {
  return static_cast<uint64_t>(latencyCycles) +
         static_cast<uint64_t>(
             std::ceil(static_cast<double>(bytes) * chip.clockHz / bytesPerSecond));
}
} // namespace

uint64_t hostTransferCycles(uint64_t bytes, const device::ChipSpec& chip) {
  return transferCycles(bytes, chip.hostLatencyCycles, chip.hostBytesPerSecond, chip);
}

uint64_t hostLatencyCycles(const device::ChipSpec& chip) {
  return static_cast<uint64_t>(chip.hostLatencyCycles);
}

uint64_t hostDataCycles(uint64_t bytes, const device::ChipSpec& chip) {
  return transferCycles(bytes, 0, chip.hostBytesPerSecond, chip);
}

uint64_t ioTileCopyCycles(uint64_t bytes, int64_t ioTiles, const device::ChipSpec& chip) {
  POPSIM_ASSERT(ioTiles > 0, "an IO tile copy needs IO tiles.");
  return ceilDiv(bytes, static_cast<uint64_t>(ioTiles * chip.exchangeBytesPerTileCycle));
}

uint64_t linkTransferCycles(uint64_t bytes, int64_t numIpus, const device::ChipSpec& chip) {
  return syncCycles(numIpus, chip) +
         transferCycles(bytes, chip.linkLatencyCycles, chip.linkBytesPerSecond, chip);
}

uint64_t streamingMemoryCycles(uint64_t bytes, const device::ChipSpec& chip) {
  return transferCycles(bytes, chip.linkLatencyCycles,
                        chip.linkBytesPerSecond / kStreamingMemorySlowdown, chip);
}

uint64_t ringPhaseCycles(uint64_t bytes, int64_t replicas, int64_t systemIpus,
                         const device::ChipSpec& chip) {
  if (replicas < 2) return 0;
  const double bandwidth =
      systemIpus > kIpusPerChassis ? kGatewayLinkBytesPerSecond : chip.linkBytesPerSecond;
  const uint64_t chunk = ceilDiv(bytes, static_cast<uint64_t>(replicas));
  return static_cast<uint64_t>(replicas - 1) *
         transferCycles(chunk, chip.linkLatencyCycles, bandwidth, chip);
}

uint64_t ringAllReduceCycles(uint64_t bytes, int64_t replicas, int64_t systemIpus,
                             const device::ChipSpec& chip) {
  return 2 * ringPhaseCycles(bytes, replicas, systemIpus, chip);
}

uint64_t syncCycles(int64_t numIpus, const device::ChipSpec& chip) {
  const double hops = 1.0 + static_cast<double>(numIpus / 4);
  return static_cast<uint64_t>(std::ceil(15e-9 * chip.clockHz * hops * 2.0));
}

} // namespace popsim::costs
