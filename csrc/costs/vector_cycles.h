#pragma once

#include "ir/dtype.h"
#include "ir/vector_arithmetic.h"

#include <cstdint>

namespace popsim::costs {

// A worker's cycles per 64-bit vector (four float16 or two float32 values)
// in an elementwise vertex: loading and storing the vector, and `op`'s
// arithmetic beyond that (PopLibs' vertex cycle estimates; see the .cpp).
// Integer and bool data take float32's figures.
inline constexpr uint64_t kVectorLoadStoreCycles = 2;
uint64_t vectorOpCycles(ir::VectorOp op, ir::DType dtype);

// A vertex's cycles per vector doing `arithmetic` per element: the load and
// store once, then each operation; no operation is one plain one.
uint64_t vertexCyclesPerVector(const ir::VectorArithmetic& arithmetic, ir::DType dtype);

} // namespace popsim::costs
