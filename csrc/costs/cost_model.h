#pragma once

#include "device/chip_spec.h"
#include "ir/node.h"
#include "ir/op_work.h"
#include "memory/op_temporaries.h"

#include <cstdint>

namespace popsim::costs {

// Simulated cycles of one op, split the way a BSP superstep is: sync, then
// exchange (moving operands between tiles), then compute on all tiles.
struct OpCost {
  uint64_t syncCycles = 0;
  uint64_t exchangeCycles = 0;
  uint64_t computeCycles = 0;
  uint64_t total() const { return syncCycles + exchangeCycles + computeCycles; }
};

// Fraction of the AMP units' peak MAC rate a tile's product sustains once
// its operands are on the tile (Graphcore quotes 0.5-0.7 for well-shaped
// layers; ipu-model.md). Tile imbalance and operand exchange are costed
// apart (productCost), not folded into it.
constexpr double kMatMulEfficiency = 0.6;

// A matrix product shared by the tiles (OpWork::Product): each group gets
// tiles / groups tiles (whole groups per tile when there are more groups
// than tiles), which split its m, k and n into pm x pk x pn blocks. Every
// tile receives its blocks of both operands over the exchange (4 bytes per
// tile-cycle) and multiplies them on its AMP units; splitting k leaves pk
// partial sums of each output block, which its tiles exchange and add in a
// second superstep. Of the splits (1, 2, 3, 4, 6, 8, ... per dimension)
// the fastest is taken, as PopLibs' planner picks the plan it estimates
// fastest. So small or thin products use few tiles, and every product pays
// for the operand bytes each tile reads, not only for its MACs.
struct ProductCost {
  uint64_t exchangeCycles = 0;
  uint64_t computeCycles = 0;
  uint64_t reductionSyncCycles = 0;
};
ProductCost productCost(const ir::OpWork::Product& product, ir::DType dtype,
                        uint64_t partialElementBytes, const device::ChipSpec& chip);

// The cost model of ../shared/reference/ipu-model.md: an op's work, as its
// family declares it (ir::opWork, ir/op_work.h), in cycles on `chip`:
// - matrix products (matmuls, convolutions): productCost, each tile's MACs
//   at MACs-per-tile-cycle x efficiency for the operands' dtype, and the
//   operand blocks each tile receives;
// - vectorised passes over n elements spread over the tiles:
//   6 x (58 + 3 x ceil(n / (6 x v))) + 11 cycles per pass (v = 2 for fp32,
//   4 for fp16);
// - bytes exchanged between tiles at 4 bytes per tile-cycle, a cross-tile
//   reduction a sync more; host, IPU-Link and collective transfers as the
//   functions below;
// - a view is free; every other op pays a sync of its IPU's tiles (of every
//   replica's IPU for a collective).
// A matmul or convolution planned in several serial passes (`temporaries`,
// from planOpTemporaries; the default is one pass) pays, for each extra pass,
// a sync and another exchange of its smaller operand.
OpCost estimateOpCost(const ir::Node& node, const device::ChipSpec& chip,
                      const memory::OpTemporaries& temporaries = {});

// A host <-> IPU transfer: fixed latency plus bytes at host bandwidth.
uint64_t hostTransferCycles(uint64_t bytes, const device::ChipSpec& chip);
// Its two parts: the host's side (the latency: preparing and handing over a
// buffer, which prefetching does ahead) and the bytes crossing PCIe into or
// out of the tiles (which occupy the tiles that receive or send them).
uint64_t hostLatencyCycles(const device::ChipSpec& chip);
uint64_t hostDataCycles(uint64_t bytes, const device::ChipSpec& chip);
// Moving `bytes` between an IPU's IO tiles and its compute tiles over the
// on-chip exchange: the `ioTiles` send or receive at 4 bytes per tile-cycle.
uint64_t ioTileCopyCycles(uint64_t bytes, int64_t ioTiles, const device::ChipSpec& chip);
// An IPU -> IPU copy over IPU-Links: sync, latency and bytes at link bandwidth.
uint64_t linkTransferCycles(uint64_t bytes, int64_t numIpus, const device::ChipSpec& chip);
// Streaming Memory (off-chip DRAM, where offloaded tensors live) <-> IPU: the
// reference puts it 3-20x slower than IPU-Links; popsim takes 8x (8 GB/s on
// Mk2's 64 GB/s links) with the links' latency.
constexpr double kStreamingMemorySlowdown = 8.0;
uint64_t streamingMemoryCycles(uint64_t bytes, const device::ChipSpec& chip);
// A ring all-reduce of `bytes` over `replicas` IPUs (one per replica) of a
// job of `systemIpus` IPUs: 2 x (replicas - 1) steps (reduce-scatter, then
// all-gather), each sending bytes / replicas to the next IPU of the ring
// with the link's latency. IPU-Links join every IPU of a rack: a Pod16's 4
// machines and a Pod64's 16, whose IPU-Links form a 2D torus (Graphcore's
// Bow Pod datasheets and IPU-POD getting-started overview: IPU-Links within
// an IPU-POD, GW-Links only between IPU-POD racks, as in a Pod128 or
// Pod256). A ring within kIpusPerIpuLinkDomain IPUs runs over IPU-Links;
// larger jobs cross racks over GW-Links, which bound the ring.
constexpr int64_t kIpusPerIpuLinkDomain = 64;
// One GW-Link of a Bow-2000 or IPU-M2000 (2 x 100 Gbit/s per machine).
constexpr double kGatewayLinkBytesPerSecond = 12.5e9;
uint64_t ringAllReduceCycles(uint64_t bytes, int64_t replicas, int64_t systemIpus,
                             const device::ChipSpec& chip);
// Half of that ring: a reduce-scatter (each IPU ends with its 1/replicas of
// the sum) or an all-gather (each IPU's part reaches all), replicas - 1 steps.
uint64_t ringPhaseCycles(uint64_t bytes, int64_t replicas, int64_t systemIpus,
                         const device::ChipSpec& chip);
// Synchronisation across `numIpus` IPUs: ceil(15 ns x f x hops x 2) cycles
// with hops = 1 + numIpus / 4 (about 40 cycles on one Mk2, 80 on four).
uint64_t syncCycles(int64_t numIpus, const device::ChipSpec& chip);

} // namespace popsim::costs
