#include "costs/cost_model.h"

#include "common/check.h"
#include "costs/vector_cycles.h"
#include "ir/op_schema.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace popsim::costs {
namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// One vectorised pass over `perTile` elements on every tile: six worker
// threads, each taking v values per vector (the tile's 64-bit vector unit
// takes two float32 or four float16 values) in `cyclesPerVector` cycles
// (vector_cycles.h; a plain operation's 3 by default).
uint64_t tilePassCycles(uint64_t perTile, ir::DType dtype, uint64_t cyclesPerVector) {
  const uint64_t vectorWidth = dtype == ir::DType::Float16 ? 4 : 2;
  return 6 * (58 + cyclesPerVector * ceilDiv(perTile, 6 * vectorWidth)) + 11;
}

// One vectorised pass over `elements` spread over all tiles, doing
// `arithmetic` per element.
uint64_t elementwisePassCycles(uint64_t elements, const device::ChipSpec& chip,
                               ir::DType dtype = ir::DType::Float32,
                               const ir::VectorArithmetic& arithmetic = {}) {
  return tilePassCycles(ceilDiv(elements, static_cast<uint64_t>(chip.tiles)), dtype,
                        vertexCyclesPerVector(arithmetic, dtype));
}

uint64_t exchangeCycles(uint64_t bytes, const device::ChipSpec& chip) {
  return ceilDiv(bytes, static_cast<uint64_t>(chip.tiles * chip.exchangeBytesPerTileCycle));
}

// Ways to split one dimension over tiles: 1, 2, 3, 4, 6, 8, 12, ... up to
// `limit`, and `limit` itself (a planner's search, kept small).
std::vector<uint64_t> splits(uint64_t limit) {
  std::vector<uint64_t> result;
  for (uint64_t power = 1; power <= limit; power *= 2) {
    result.push_back(power);
    if (power * 3 / 2 > power && power * 3 / 2 <= limit) result.push_back(power * 3 / 2);
  }
  if (result.back() != limit) result.push_back(limit);
  return result;
}

} // namespace

ProductCost productCost(const ir::OpWork::Product& product, ir::DType dtype,
                        uint64_t partialElementBytes, const device::ChipSpec& chip) {
  const auto tiles = static_cast<uint64_t>(chip.tiles);
  const uint64_t elementBytes = ir::elementSize(dtype);
  const int64_t perTileCycle =
      dtype == ir::DType::Float16 ? chip.fp16MacsPerTileCycle : chip.fp32MacsPerTileCycle;
  const double macsPerCycle = static_cast<double>(perTileCycle) * kMatMulEfficiency;
  const auto computeOf = [&](uint64_t macs) {
    return static_cast<uint64_t>(std::ceil(static_cast<double>(macs) / macsPerCycle));
  };
  const auto receiveOf = [&](uint64_t bytes) {
    return ceilDiv(bytes, static_cast<uint64_t>(chip.exchangeBytesPerTileCycle));
  };
  const uint64_t m = std::max<uint64_t>(product.m, 1);
  const uint64_t k = std::max<uint64_t>(product.k, 1);
  const uint64_t n = std::max<uint64_t>(product.n, 1);
  ProductCost best;
  if (product.groups >= tiles) { // whole groups per tile
    const uint64_t groups = ceilDiv(product.groups, tiles);
    best.exchangeCycles = receiveOf(groups * (m * k + k * n) * elementBytes);
    best.computeCycles = computeOf(groups * m * k * n);
    return best;
  }
  const uint64_t perGroup = tiles / product.groups;
  uint64_t bestTotal = UINT64_MAX;
  for (uint64_t pm : splits(std::min(m, perGroup))) {
    for (uint64_t pn : splits(std::min(n, perGroup / pm))) {
      const uint64_t pk = std::min(k, perGroup / (pm * pn));
      const uint64_t mm = ceilDiv(m, pm);
      const uint64_t kk = ceilDiv(k, pk);
      const uint64_t nn = ceilDiv(n, pn);
      ProductCost cost;
      cost.exchangeCycles = receiveOf((mm * kk + kk * nn) * elementBytes);
      cost.computeCycles = computeOf(mm * kk * nn);
      if (pk > 1) {
        // The pk tiles of an output block each reduce 1 / pk of it: they
        // receive that part of the others' partial sums and add them.
        const uint64_t share = ceilDiv(mm * nn, pk) * (pk - 1);
        cost.reductionSyncCycles = syncCycles(1, chip);
        cost.exchangeCycles += receiveOf(share * partialElementBytes);
        const ir::DType partialType =
            partialElementBytes == 2 ? ir::DType::Float16 : ir::DType::Float32;
        cost.computeCycles +=
            tilePassCycles(share, partialType, vertexCyclesPerVector({}, partialType));
      }
      const uint64_t total = cost.exchangeCycles + cost.computeCycles + cost.reductionSyncCycles;
      if (total < bestTotal) {
        bestTotal = total;
        best = cost;
      }
    }
  }
  return best;
}

OpCost estimateOpCost(const ir::Node& node, const device::ChipSpec& chip,
                      const memory::OpTemporaries& temporaries) {
  const ir::OpWork work = ir::opWork(node);
  OpCost cost;
  if (work.free) {
    return cost; // a view: no superstep at all
  }
  using Collective = ir::OpWork::Collective;
  // The superstep's sync: this IPU's tiles, or every replica's IPU for a
  // collective; an inter-IPU copy's receiver only waits for the link.
  cost.syncCycles = work.linkTransfer                     ? 0
                    : work.collective != Collective::None ? syncCycles(work.systemIpus, chip)
                                                          : syncCycles(1, chip);
  // A matrix product's exchange is its tiles' operand blocks (below).
  const bool product = work.product.m != 0;
  cost.exchangeCycles = exchangeCycles(work.exchangedBytes, chip);
  if (work.crossTileReduction) cost.exchangeCycles += syncCycles(1, chip);
  if (work.hostTransfer) cost.exchangeCycles += hostTransferCycles(work.hostBytes, chip);
  if (work.linkTransfer) cost.exchangeCycles += linkTransferCycles(work.linkBytes, 2, chip);
  switch (work.collective) {
  case Collective::AllReduce:
    cost.exchangeCycles +=
        ringAllReduceCycles(work.collectiveBytes, work.replicas, work.systemIpus, chip);
    break;
  case Collective::ReduceScatter:
  case Collective::AllGather:
    cost.exchangeCycles +=
        ringPhaseCycles(work.collectiveBytes, work.replicas, work.systemIpus, chip);
    break;
  case Collective::None: break;
  }
  if (work.vectorPasses > 0) {
    // The first pass does the op's arithmetic, the others one plain operation.
    cost.computeCycles =
        elementwisePassCycles(work.vectorElements, chip, work.vectorType, work.vectorArithmetic) +
        (work.vectorPasses - 1) * elementwisePassCycles(work.vectorElements, chip, work.vectorType);
  }
  if (product) {
    const ProductCost shared =
        productCost(work.product, work.macType, temporaries.partialElementBytes, chip);
    cost.exchangeCycles += shared.exchangeCycles;
    cost.computeCycles += shared.computeCycles;
    cost.syncCycles += shared.reductionSyncCycles;
  } else {
    POPSIM_ASSERT(work.macs == 0, node.describe(), ": multiply-accumulates without their product.");
  }
  if (work.collectiveReduces) {
    // Each IPU adds the (replicas - 1) chunks of float32 it receives.
    const uint64_t elements = work.collectiveBytes / sizeof(float);
    const auto replicas = static_cast<uint64_t>(work.replicas);
    cost.computeCycles += elementwisePassCycles(ceilDiv(elements * (replicas - 1), replicas), chip);
  }
  if (node.schema().plannedTemporaries) {
    // Each extra pass availableMemoryProportion forces syncs and exchanges
    // the smaller operand again.
    const uint64_t extraPasses = temporaries.passes - 1;
    cost.syncCycles += extraPasses * syncCycles(1, chip);
    cost.exchangeCycles += extraPasses * exchangeCycles(temporaries.smallerOperandBytes, chip);
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
      systemIpus > kIpusPerIpuLinkDomain ? kGatewayLinkBytesPerSecond : chip.linkBytesPerSecond;
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
