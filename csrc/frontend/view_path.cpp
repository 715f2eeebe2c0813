#include "frontend/view_path.h"

#include "frontend/lowering_context.h"

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
    const auto& perm = step.attrs.getInts("perm");
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    }
    return graph.apply(ir::OpKind::Permute, {update}, {{"perm", inverse}}, location);
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

} // namespace

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
