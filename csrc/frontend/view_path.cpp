#include "frontend/view_path.h"

#include "frontend/lowering_context.h"

#include <algorithm>
#include <vector>

namespace popsim::frontend {
namespace {

bool isViewStep(ir::OpKind kind) {
  return kind == ir::OpKind::Reshape || kind == ir::OpKind::Permute || kind == ir::OpKind::Slice ||
         kind == ir::OpKind::Broadcast || kind == ir::OpKind::StopGradient;
}

ir::Value* apply(ir::Graph& graph, const ViewStep& step, ir::Value* input,
                 const ir::SourceLocation& location) {
  return graph.apply(step.kind, {input}, step.attrs, location);
}

// `base` with its view through `step` replaced by `update`.
ir::Value* invert(ir::Graph& graph, const ViewStep& step, ir::Value* base, ir::Value* update,
                  const ir::SourceLocation& location) {
  switch (step.kind) {
  case ir::OpKind::Reshape:
    return graph.apply(ir::OpKind::Reshape, {update}, {{"shape", base->type().shape}}, location);
  case ir::OpKind::Permute: {
    return graph.apply(ir::OpKind::Permute, {update},
                       {{"perm", ir::inversePermutation(step.attrs.getInts("perm"))}}, location);
  }
  case ir::OpKind::Slice:
    return graph.apply(ir::OpKind::SliceUpdate, {base, update}, step.attrs, location);
  case ir::OpKind::Broadcast:
    // Eager PyTorch refuses such writes too (several elements share memory).
    throw UnsupportedLowering("an in-place write into an expanded view, whose elements share "
                              "memory; clone() the expanded tensor first");
  default:
    // stop_gradient: the written values are the base's new values. (Eager
    // autograd would not see the write either.)
    return update;
  }
}

// The elements of `source` at the positions of `shape` read through `strides` from `offset`.
std::vector<int64_t> gather(const std::vector<int64_t>& source, const ir::Shape& shape,
                            const std::vector<int64_t>& strides, int64_t offset) {
  std::vector<int64_t> result = stridedPositions(shape, strides, offset);
  for (int64_t& at : result)
    at = source[static_cast<size_t>(at)];
  return result;
}

} // namespace

std::vector<int64_t> stridedPositions(const ir::Shape& shape, const std::vector<int64_t>& strides,
                                      int64_t offset) {
  std::vector<int64_t> result;
  const int64_t count = ir::elementCount(shape);
  result.reserve(static_cast<size_t>(count));
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t at = offset;
    for (size_t d = 0; d < shape.size(); ++d)
      at += index[d] * strides[d];
    result.push_back(at);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return result;
}

std::vector<int64_t> viewedElements(const ir::Shape& baseShape, const ViewPath& path) {
  std::vector<int64_t> elements(static_cast<size_t>(ir::elementCount(baseShape)));
  for (size_t i = 0; i < elements.size(); ++i)
    elements[i] = static_cast<int64_t>(i);
  ir::Shape shape = baseShape;
  for (const ViewStep& step : path) {
    const std::vector<int64_t> strides = ir::contiguousStrides(shape);
    switch (step.kind) {
    case ir::OpKind::Reshape: shape = step.attrs.getInts("shape"); break;
    case ir::OpKind::Permute: {
      const auto& perm = step.attrs.getInts("perm");
      ir::Shape permuted(perm.size());
      std::vector<int64_t> permutedStrides(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        permuted[i] = shape[static_cast<size_t>(perm[i])];
        permutedStrides[i] = strides[static_cast<size_t>(perm[i])];
      }
      elements = gather(elements, permuted, permutedStrides, 0);
      shape = permuted;
      break;
    }
    case ir::OpKind::Slice: {
      const auto dim = static_cast<size_t>(step.attrs.getInt("dim"));
      const int64_t start = step.attrs.getInt("start");
      const int64_t stepSize = step.attrs.getInt("step");
      ir::Shape sliced = shape;
      sliced[dim] = (step.attrs.getInt("end") - start + stepSize - 1) / stepSize;
      std::vector<int64_t> slicedStrides = strides;
      slicedStrides[dim] *= stepSize;
      elements = gather(elements, sliced, slicedStrides, start * strides[dim]);
      shape = sliced;
      break;
    }
    case ir::OpKind::Broadcast: {
      const ir::Shape& target = step.attrs.getInts("shape");
      std::vector<int64_t> broadcastStrides(target.size(), 0);
      const size_t lead = target.size() - shape.size();
      for (size_t d = 0; d < shape.size(); ++d) {
        broadcastStrides[lead + d] = shape[d] == 1 ? 0 : strides[d];
      }
      elements = gather(elements, target, broadcastStrides, 0);
      shape = target;
      break;
    }
    default: break; // stop_gradient
    }
  }
  return elements;
}

bool readsWhatItOverwrites(const ir::Shape& baseShape, const ViewPath& written,
                           const ViewPath& read) {
  const auto sameStep = [](const ViewStep& a, const ViewStep& b) {
    return a.kind == b.kind && a.attrs == b.attrs;
  };
  if (std::equal(written.begin(), written.end(), read.begin(), read.end(), sameStep)) {
    return false; // x.mul_(x): every element reads itself
  }
  const std::vector<int64_t> writes = viewedElements(baseShape, written);
  const std::vector<int64_t> reads = viewedElements(baseShape, read);
  // Position in the written view of each element of the base (-1: not written).
  std::vector<int64_t> writtenAt(static_cast<size_t>(ir::elementCount(baseShape)), -1);
  for (size_t i = 0; i < writes.size(); ++i)
    writtenAt[static_cast<size_t>(writes[i])] = static_cast<int64_t>(i);
  for (size_t j = 0; j < reads.size(); ++j) {
    const int64_t at = writtenAt[static_cast<size_t>(reads[j])];
    // Positions only line up when the views have the same number of elements.
    if (at >= 0 && (reads.size() != writes.size() || at != static_cast<int64_t>(j))) {
      return true;
    }
  }
  return false;
}

std::optional<ViewPath> findViewPath(const ir::Value* base, const ir::Value* view) {
  ViewPath reversed;
  const ir::Value* value = view;
  while (value != base) {
    const ir::Node* producer = value->producer();
    if (producer == nullptr || !isViewStep(producer->kind())) {
      return std::nullopt;
    }
    reversed.push_back({producer->kind(), producer->attrs()});
    value = producer->input(0);
  }
  return ViewPath(reversed.rbegin(), reversed.rend());
}

ir::Value* readView(ir::Graph& graph, ir::Value* base, const ViewPath& path,
                    const ir::SourceLocation& location) {
  ir::Value* value = base;
  for (const ViewStep& step : path) {
    value = apply(graph, step, value, location);
  }
  return value;
}

ir::Value* writeView(ir::Graph& graph, ir::Value* base, const ViewPath& path, ir::Value* update,
                     const ir::SourceLocation& location) {
  // The base as each step sees it, then the update carried back step by step.
  std::vector<ir::Value*> bases = {base};
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    bases.push_back(apply(graph, path[i], bases.back(), location));
  }
  ir::Value* value = update;
  for (size_t i = path.size(); i-- > 0;) {
    value = invert(graph, path[i], bases[i], value, location);
  }
  return value;
}

} // namespace popsim::frontend
