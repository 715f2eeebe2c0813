#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

namespace popsim::kernels::reference {

// Sum or mean over the listed dimensions, accumulated in double.
void reduction(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  const ir::Shape& shape = node.input(0)->type().shape;
  const auto& dims = node.attrs().getInts("dims");
  // Output strides seen from the input: 0 along reduced dimensions.
  ir::Shape kept = shape;
  for (int64_t d : dims) {
    kept[d] = 1;
  }
  std::vector<int64_t> strides = ir::contiguousStrides(kept);
  int64_t reducedCount = 1;
  for (int64_t d : dims) {
    strides[d] = 0;
    reducedCount *= shape[d];
  }
  std::vector<double> sums(static_cast<size_t>(ir::elementCount(kept)), 0.0);
  int64_t linear = 0;
  forEachIndex(shape, [&](const std::vector<int64_t>& index) {
    sums[static_cast<size_t>(dot(index, strides))] += x[linear++];
  });
  const bool mean = node.kind() == ir::OpKind::ReduceMean;
  for (size_t i = 0; i < sums.size(); ++i) {
    y[i] = static_cast<float>(mean ? sums[i] / static_cast<double>(reducedCount) : sums[i]);
  }
}

} // namespace popsim::kernels::reference
