#pragma once

#include "ir/binary_functions.h"
#include "ir/node.h"
#include "kernels/reference/broadcast_rows.h"
#include "kernels/reference/fast_binary_functions.h"

#include <array>
#include <vector>

// The arithmetic of binary_pointwise, binary_pointwise_grad and where, shared
// by the reference kernel and the parallel one (binary_pointwise_kernel.cpp):
// each computes any range of its output's pieces.
namespace popsim::kernels::reference {

// Vectorised loops over float pieces that the parallel kernel hands in
// (vector/elementwise_loops.h); the reference loops run without them.
struct FloatPieceLoops {
  void (*values)(size_t formula, const float* a, int64_t sa, const float* b, int64_t sb, float* y,
                 int64_t count) = nullptr;
  void (*gradients)(size_t formula, int64_t operand, const float* dy, int64_t sdy, const float* a,
                    int64_t sa, const float* b, int64_t sb, float* dx, int64_t count) = nullptr;
};

class BroadcastElementwise {
public:
  explicit BroadcastElementwise(const ir::Node& node, FloatPieceLoops loops = {});

  // Whether float pieces run the loops handed in (not the reference loops
  // or the fast float loops of fast_binary_functions.h).
  bool vectorised() const { return vectorised_; }

  int64_t pieces() const { return rows_.pieces(); }
  // Computes pieces [first, last). Returns false when an integer division
  // by zero left elements undefined (the caller raises the error).
  bool run(const std::vector<const void*>& inputs, void* output, int64_t first, int64_t last) const;
  // The error for an integer division by zero.
  [[noreturn]] void throwDivisionByZero() const;

private:
  struct Piece;
  void runWhere(const Piece& piece, size_t elementBytes) const;
  void runGradient(const Piece& piece) const;
  bool runValues(const Piece& piece) const; // false: an integer division by zero
  bool usesLoops() const;

  const ir::Node& node_;
  BroadcastRows rows_;
  const ir::BinaryFunction* function_ = nullptr; // binary_pointwise(_grad)
  int64_t operand_ = 0;                          // binary_pointwise_grad
  FastBinaryPiece fast_ = nullptr;               // binary_pointwise of floats, if it has one
  FloatPieceLoops loops_;                        // used where vectorised()
  bool vectorised_ = false;
  std::array<size_t, 3> operandBytes_{}; // each input's element size
};

} // namespace popsim::kernels::reference
