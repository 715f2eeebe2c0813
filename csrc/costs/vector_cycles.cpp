#include "costs/vector_cycles.h"

namespace popsim::costs {
namespace {

// Cycles per vector beyond its load and store, for float16 and float32, from
// PopLibs' elementwise vertex cycle estimates (graphcore/poplibs,
// lib/popops/popopsCycleEstimators.hpp, unaryOpPerfInfo and
// binaryOpPerfInfo; lib/popnn/PerformanceEstimation.hpp,
// getNonLinearityOpCycles). A standalone vertex of one operation costs its
// PopLibs figure per vector: the 2 cycles of load and store (the loop
// overhead of PopLibs' add and multiply codelets, whose own cycle is the
// plain operation's) plus the figure here. Figures PopLibs gives per loop
// of u elements are scaled to the vector; those it gives per element
// without an unroll factor add PopLibs' 5 cycles of loop overhead.
struct Rates {
  uint64_t half;
  uint64_t single;
};

constexpr Rates rates(ir::VectorOp op) {
  using ir::VectorOp;
  switch (op) {
  case VectorOp::Plain: return {1, 1};         // ADD/MULTIPLY {1, vectorised}
  case VectorOp::Compare: return {2, 2};       // MAXIMUM {4 per 4 halves, 4 per 2 floats}
  case VectorOp::Divide: return {19, 8};       // DIVIDE {21 per 4, 10 per 2}
  case VectorOp::Reciprocal: return {13, 4};   // INVERSE {15 per 4, 6 per 2}
  case VectorOp::Exp: return {2, 4};           // EXPONENT {4 per 4, 6 per 2}
  case VectorOp::Log: return {2, 10};          // LOGARITHM {4 per 4, 12 per 2}
  case VectorOp::Log1p: return {183, 183};     // LOGARITHM_ONE_PLUS {180 + 5 per vector}
  case VectorOp::Sqrt: return {21, 8};         // SQRT {23 per 4, 10 per 2}
  case VectorOp::Rsqrt: return {17, 6};        // RSQRT {19 per 4, 8 per 2}
  case VectorOp::Sigmoid: return {4, 10};      // SIGMOID {6 per 4, 12 per 2}
  case VectorOp::Tanh: return {2, 10};         // TANH {4 per 4, 12 per 2}
  case VectorOp::Erf: return {62, 34};         // ERF {16 per half, 18 per float}
  case VectorOp::SinCos: return {102, 4608};   // SIN/COS {26 per half, 2300 + 5 per float}
  case VectorOp::Tan: return {22798, 10198};   // TAN {5700 per half, 5100 per float}
  case VectorOp::Asin: return {426, 212};      // ASIN {102 + 5 per element}
  case VectorOp::Power: return {1298, 622};    // POWER {325 per half, 312 per float}
  case VectorOp::Atan2: return {576, 270};     // ATAN2 {578 per 4, 272 per 2}
  case VectorOp::Remainder: return {298, 131}; // REMAINDER {300 per 4, 133 per 2}
  case VectorOp::Round: return {5, 5};         // FLOOR/CEIL/ROUND {2 + 5 per vector}
  case VectorOp::Sign: return {8, 8};          // SIGNUM {5 + 5 per vector}
  case VectorOp::Gelu: return {8, 18};         // popnn GELU: 2 x {5, 10} per vector
  }
  return {1, 1};
}

} // namespace

uint64_t vectorOpCycles(ir::VectorOp op, ir::DType dtype) {
  const Rates r = rates(op);
  return dtype == ir::DType::Float16 ? r.half : r.single;
}

uint64_t vertexCyclesPerVector(const ir::VectorArithmetic& arithmetic, ir::DType dtype) {
  uint64_t cycles = kVectorLoadStoreCycles;
  if (arithmetic.empty()) return cycles + vectorOpCycles(ir::VectorOp::Plain, dtype);
  for (ir::VectorOp op : arithmetic)
    cycles += vectorOpCycles(op, dtype);
  return cycles;
}

} // namespace popsim::costs
