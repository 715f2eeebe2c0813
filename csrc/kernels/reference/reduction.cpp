#include "kernels/reference/chained_sum.h"
#include "kernels/reference/families.h"

#include <vector>

namespace popsim::kernels::reference {
namespace {

// The input seen as runs of dimensions that are all reduced or all kept:
// [N, C, H, W] reduced over {0, 2, 3} becomes [N | C | H*W] with flags
// (reduced, kept, reduced), so the innermost loop runs over contiguous memory.
struct Runs {
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
};

Runs collapse(const ir::Shape& shape, const std::vector<int64_t>& dims) {
  std::vector<bool> isReduced(shape.size(), false);
  for (int64_t d : dims)
    isReduced[static_cast<size_t>(d)] = true;
  Runs runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue; // size-1 dimensions change nothing
    if (!runs.sizes.empty() && runs.reduced.back() == isReduced[d]) {
      runs.sizes.back() *= shape[d];
    } else {
      runs.sizes.push_back(shape[d]);
      runs.reduced.push_back(isReduced[d]);
    }
  }
  if (runs.sizes.empty()) {
    runs.sizes.push_back(1);
    runs.reduced.push_back(false);
  }
  return runs;
}

// Adds each input element into its output sum, walking the runs recursively;
// kept runs advance the output position, reduced ones do not.
template <typename T, typename Accumulator>
void accumulate(const Runs& runs, size_t run, const T*& x, Accumulator* sums) {
  const int64_t size = runs.sizes[run];
  const bool last = run + 1 == runs.sizes.size();
  if (last) {
    if (runs.reduced[run]) {
      sums[0] += chainedSum<Accumulator>(x, size);
    } else {
      for (int64_t i = 0; i < size; ++i)
        sums[i] += static_cast<Accumulator>(x[i]);
    }
    x += size;
    return;
  }
  int64_t inner = 1; // output elements covered by one step of this run
  for (size_t r = run + 1; r < runs.sizes.size(); ++r) {
    if (!runs.reduced[r]) inner *= runs.sizes[r];
  }
  for (int64_t i = 0; i < size; ++i) {
    accumulate(runs, run + 1, x, runs.reduced[run] ? sums : sums + i * inner);
  }
}

// Sums over the listed dimensions of `T`, accumulated in `Accumulator`.
template <typename T, typename Accumulator>
std::vector<Accumulator> sums(const ir::Node& node, const void* input) {
  const auto* x = static_cast<const T*>(input);
  std::vector<Accumulator> result(static_cast<size_t>(node.output()->type().numel()), 0);
  accumulate(collapse(node.input(0)->type().shape, node.attrs().getInts("dims")), 0, x,
             result.data());
  return result;
}

} // namespace

// Sum or mean over the listed dimensions: float32 accumulated in double,
// int64 sums in (wrapping) int64 arithmetic.
void reduction(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.input(0)->type().dtype == ir::DType::Int64) {
    const std::vector<uint64_t> total = sums<int64_t, uint64_t>(node, inputs[0]);
    auto* y = static_cast<int64_t*>(outputs[0]);
    for (size_t i = 0; i < total.size(); ++i)
      y[i] = static_cast<int64_t>(total[i]);
    return;
  }
  const ir::Shape& shape = node.input(0)->type().shape;
  int64_t reducedCount = 1;
  for (int64_t d : node.attrs().getInts("dims"))
    reducedCount *= shape[static_cast<size_t>(d)];
  const std::vector<double> total = sums<float, double>(node, inputs[0]);
  const bool mean = node.kind() == ir::OpKind::ReduceMean;
  auto* y = static_cast<float*>(outputs[0]);
  for (size_t i = 0; i < total.size(); ++i) {
    y[i] = static_cast<float>(mean ? total[i] / static_cast<double>(reducedCount) : total[i]);
  }
}

} // namespace popsim::kernels::reference
