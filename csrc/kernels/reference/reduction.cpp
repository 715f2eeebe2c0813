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
void accumulate(const Runs& runs, size_t run, const float*& x, double* sums) {
  const int64_t size = runs.sizes[run];
  const bool last = run + 1 == runs.sizes.size();
  if (last) {
    if (runs.reduced[run]) {
      double sum = 0.0;
      for (int64_t i = 0; i < size; ++i)
        sum += x[i];
      sums[0] += sum;
    } else {
      for (int64_t i = 0; i < size; ++i)
        sums[i] += x[i];
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

} // namespace

// Sum or mean over the listed dimensions, accumulated in double.
void reduction(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  const ir::Shape& shape = node.input(0)->type().shape;
  const auto& dims = node.attrs().getInts("dims");
  int64_t reducedCount = 1;
  for (int64_t d : dims)
    reducedCount *= shape[static_cast<size_t>(d)];
  const int64_t count = node.output()->type().numel();
  std::vector<double> sums(static_cast<size_t>(count), 0.0);
  const Runs runs = collapse(shape, dims);
  accumulate(runs, 0, x, sums.data());
  const bool mean = node.kind() == ir::OpKind::ReduceMean;
  for (int64_t i = 0; i < count; ++i) {
    const double sum = sums[static_cast<size_t>(i)];
    y[i] = static_cast<float>(mean ? sum / static_cast<double>(reducedCount) : sum);
  }
}

} // namespace popsim::kernels::reference
