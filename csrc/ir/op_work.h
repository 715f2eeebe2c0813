#pragma once

#include "ir/dtype.h"
#include "ir/vector_arithmetic.h"

#include <cstdint>

namespace popsim::ir {

class Node;

// What one op does on an IPU, counted in the units a chip's rates are quoted
// in: multiply-accumulates, vectorised passes over elements, bytes exchanged
// between tiles, host and IPU-Link transfers, collectives across replicas.
// Each op family declares its ops' rules next to their schemas (ir/ops);
// costs/cost_model.cpp turns the work into cycles on a chip, with one set of
// physical rules for all ops. An op spends a sync of its IPU's tiles (a BSP
// superstep), then exchanges, then computes, unless it is a view.
struct OpWork {
  // A view (reshape, stop_gradient): no superstep at all.
  bool free = false;
  // Multiply-accumulates on the AMP units at `macType`'s rate (matmuls and
  // convolutions, whose temporaries the memory plan sizes and may split
  // into passes).
  uint64_t macs = 0;
  DType macType = DType::Float32;
  // The product as `groups` independent [m x k] x [k x n] matrix products
  // (a batched matmul's batch, a grouped convolution's groups; a
  // convolution as its implicit matrix product: m output positions, k taps
  // over the input channels, n output channels): how the tiles can share
  // the work and what each must receive. groups x m x k x n = macs.
  struct Product {
    uint64_t groups = 1;
    uint64_t m = 0;
    uint64_t k = 0;
    uint64_t n = 0;
  };
  Product product;
  // Passes of the tiles' vector units over `vectorElements` elements of
  // `vectorType`, spread over all tiles: each pass one vertex that loads,
  // computes and stores every element. The first pass does
  // `vectorArithmetic` per element (an elementwise function's operations);
  // empty, and in the other passes, one plain operation (an add or a
  // multiply).
  uint64_t vectorPasses = 0;
  uint64_t vectorElements = 0;
  DType vectorType = DType::Float32;
  VectorArithmetic vectorArithmetic;
  // Bytes moved between tiles over the on-chip exchange.
  uint64_t exchangedBytes = 0;
  // Partial results cross tiles once more to be combined (a reduction): a
  // sync more, within the exchange.
  bool crossTileReduction = false;
  // Bytes streamed to or from the host in the middle of the program
  // (print_tensor, host_call): a host transfer.
  bool hostTransfer = false;
  uint64_t hostBytes = 0;
  // Bytes sent over the IPU-Links to another IPU (ipu_copy): the receiving
  // IPU waits for them; no superstep sync of its own.
  bool linkTransfer = false;
  uint64_t linkBytes = 0;
  // A collective over the job's replicas: every replica's IPU syncs, and the
  // ring moves `collectiveBytes` (an all-reduce both ways, a reduce-scatter
  // or an all-gather one way); reducing, each IPU adds the chunks it gets.
  enum class Collective { None, AllReduce, ReduceScatter, AllGather };
  Collective collective = Collective::None;
  uint64_t collectiveBytes = 0;
  int64_t replicas = 1;
  int64_t systemIpus = 1;
  bool collectiveReduces = false;
};

// An op's work, from its family's rule (opSchema(kind).work). A view, or a
// cast the IPU does not run (isFreeOnIpu), is free; an op the IPU runs in
// float16 (Placement::float16OnIpu) costs float16's rates and bytes.
OpWork opWork(const Node& node);

// Rules several families share.
namespace work {
// `passes` vectorised passes over the data the op produces (its first
// output, or the variable an in-place update writes), in its dtype: the
// elementwise ops.
OpWork elementwisePasses(const Node& node, uint64_t passes);
// One elementwise pass (one vertex) doing `arithmetic` per element: an
// elementwise function (vector_arithmetic.h).
OpWork elementwiseFunction(const Node& node, VectorArithmetic arithmetic);
// Elementwise work of `Passes` passes whose first does `FirstPass` per
// element (none: plain arithmetic).
template <uint64_t Passes, VectorOp... FirstPass> OpWork elementwise(const Node& node) {
  OpWork work = elementwisePasses(node, Passes);
  work.vectorArithmetic = {FirstPass...};
  return work;
}
// `Passes` vectorised passes over the first input (in its dtype), whose
// partial results cross tiles once and are exchanged as the output's bytes:
// reductions, normalisations, softmax, losses, sorts.
template <uint64_t Passes> OpWork reduction(const Node& node);
// The data the op produces moved between tiles, no arithmetic: layout ops,
// gathers and scatters, copies of one tensor into another.
OpWork movement(const Node& node);
} // namespace work

} // namespace popsim::ir
