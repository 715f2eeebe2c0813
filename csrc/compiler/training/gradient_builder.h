#pragma once

#include "ir/graph.h"

#include <vector>

namespace popsim::compiler {

// Emits the backward ops of one forward node: at the forward node's source
// location and IPU, in the Backward phase, so that gradients are reported and
// placed with the code they come from.
class GradientBuilder {
public:
  GradientBuilder(ir::Graph& graph, const ir::Node& forward);

  const ir::Node& forward() const { return forward_; }
  ir::Value* emit(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                  ir::Attributes attrs = {});
  std::vector<ir::Value*> emitMulti(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                                    ir::Attributes attrs = {});

  ir::Value* reshape(ir::Value* value, const ir::Shape& shape);
  ir::Value* affine(ir::Value* value, double scale, double shift);
  // Sums a broadcast gradient back to the shape of the operand it came from.
  ir::Value* sumToShape(ir::Value* gradient, const ir::Shape& shape);
  // Zeros of `shape` (a broadcast scalar constant) in the dtype of the
  // forward op's float operands (float32 if it has none).
  ir::Value* zeros(const ir::Shape& shape);
  // Swaps the last two dimensions.
  ir::Value* transposeLast(ir::Value* value);

private:
  ir::Graph& graph_;
  const ir::Node& forward_;
};

// The gradient of each input of `node` (null where not needed or not
// differentiable) from the gradients of its outputs (null where the output
// does not reach the loss). `needed[i]` says whether input i needs one.
using GradientRule = std::vector<ir::Value*> (*)(GradientBuilder& builder,
                                                 const std::vector<ir::Value*>& outputGrads,
                                                 const std::vector<bool>& needed);

// The rule of an op kind, or null when popsim cannot differentiate it.
GradientRule findGradientRule(ir::OpKind kind);

} // namespace popsim::compiler
