#include "ir/op_work.h"

#include "common/check.h"
#include "ir/node.h"
#include "ir/op_schema.h"

#include <utility>

namespace popsim::ir {
namespace {

// The data an op produces: its first output, or for in-place updates the
// variable it writes.
const TensorType& produced(const Node& node) {
  return node.outputs().empty() ? node.input(0)->type() : node.output()->type();
}

} // namespace

OpWork opWork(const Node& node) {
  const OpSchema& schema = node.schema();
  if (isFreeOnIpu(node)) { // a view, or a cast only popsim runs
    OpWork none;
    none.free = true;
    return none;
  }
  POPSIM_ASSERT(schema.work != nullptr, "op ", schema.name(), " declares no work rule.");
  OpWork work = schema.work(node);
  if (node.placement().float16OnIpu &&
      (work.vectorType == DType::Float32 || work.macType == DType::Float32)) {
    // The IPU's vertex works on the float16 values popsim widens.
    if (work.vectorType == DType::Float32) work.vectorType = DType::Float16;
    if (work.macType == DType::Float32) work.macType = DType::Float16;
    work.exchangedBytes /= 2;
  }
  return work;
}

namespace work {

OpWork elementwisePasses(const Node& node, uint64_t passes) {
  OpWork work;
  work.vectorPasses = passes;
  work.vectorElements = static_cast<uint64_t>(produced(node).numel());
  work.vectorType = produced(node).dtype;
  return work;
}

OpWork elementwiseFunction(const Node& node, VectorArithmetic arithmetic) {
  OpWork work = elementwisePasses(node, 1);
  work.vectorArithmetic = std::move(arithmetic);
  return work;
}

template <uint64_t Passes> OpWork reduction(const Node& node) {
  OpWork work;
  work.exchangedBytes = produced(node).bytes();
  work.crossTileReduction = true;
  work.vectorPasses = Passes;
  work.vectorElements = static_cast<uint64_t>(node.input(0)->type().numel());
  work.vectorType = node.input(0)->type().dtype;
  return work;
}

OpWork movement(const Node& node) {
  OpWork work;
  work.exchangedBytes = produced(node).bytes();
  return work;
}

template OpWork reduction<1>(const Node&);
template OpWork reduction<2>(const Node&);
template OpWork reduction<3>(const Node&);
template OpWork reduction<4>(const Node&);
template OpWork reduction<6>(const Node&);

} // namespace work
} // namespace popsim::ir
