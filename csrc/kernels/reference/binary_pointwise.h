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

class BroadcastElementwise {
public:
  explicit BroadcastElementwise(const ir::Node& node);

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

  const ir::Node& node_;
  BroadcastRows rows_;
  const ir::BinaryFunction* function_ = nullptr; // binary_pointwise(_grad)
  int64_t operand_ = 0;                          // binary_pointwise_grad
  FastBinaryPiece fast_ = nullptr;               // binary_pointwise of floats, if it has one
  std::array<size_t, 3> operandBytes_{};         // each input's element size
};

} // namespace popsim::kernels::reference
