#pragma once

#include "ir/graph.h"

#include <vector>

namespace popsim::ir {

// Emits the backward ops of one forward node: at the forward node's source
// location and IPU, in the Backward phase, so that gradients are reported and
// placed with the code they come from.
class GradientBuilder {
public:
  GradientBuilder(Graph& graph, const Node& forward);

  const Node& forward() const { return forward_; }
  const Graph& graph() const { return graph_; }
  Value* emit(OpKind kind, const std::vector<Value*>& inputs, Attributes attrs = {});
  std::vector<Value*> emitMulti(OpKind kind, const std::vector<Value*>& inputs,
                                Attributes attrs = {});

  Value* reshape(Value* value, const Shape& shape);
  Value* affine(Value* value, double scale, double shift);
  // Sums a broadcast gradient back to the shape of the operand it came from.
  Value* sumToShape(Value* gradient, const Shape& shape);
  // Zeros of `shape` (a broadcast scalar constant) in the dtype of the
  // forward op's float operands (float32 if it has none).
  Value* zeros(const Shape& shape);
  // Zeros of `type`.
  Value* zerosOf(const TensorType& type);
  // Swaps the last two dimensions.
  Value* transposeLast(Value* value);

private:
  Graph& graph_;
  const Node& forward_;
};

} // namespace popsim::ir
