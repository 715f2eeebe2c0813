#include "frontend/overlap_marks.h"

#include "common/check.h"
#include "frontend/source_location.h"

#include <torch/csrc/jit/ir/ir.h>

namespace popsim::frontend {
namespace {

namespace jit = torch::jit;

constexpr const char* kInputMarker = "popsim::set_overlap_for_input";
constexpr const char* kOutputMarker = "popsim::set_overlap_for_output";

bool isMarker(const jit::Node& node, const char* kind) {
  return std::string(node.kind().toQualString()) == kind;
}

ir::HostOverlap modeOf(const jit::Node& marker) {
  const std::optional<c10::IValue> mode = jit::toIValue(marker.input(1));
  POPSIM_ASSERT(mode && mode->isString(), marker.kind().toQualString(),
                " takes a constant mode string.");
  const std::optional<ir::HostOverlap> overlap = ir::parseHostOverlap(mode->toStringRef());
  POPSIM_CHECK(overlap.has_value(), ErrorKind::Compilation, "unknown host overlap mode '",
               mode->toStringRef(), "': use a popsim.OverlapMode.");
  return *overlap;
}

// How many times the model returns `value`, directly or inside the tuples,
// lists and dicts it returns (following output markers).
size_t timesReturned(const jit::Value* value) {
  size_t count = 0;
  for (const jit::Use& use : value->uses()) {
    const std::string kind = use.user->kind().toQualString();
    if (kind == "prim::Return") {
      ++count;
    } else if (kind == kOutputMarker || kind == "prim::TupleConstruct" ||
               kind == "prim::ListConstruct" || kind == "prim::DictConstruct") {
      count += timesReturned(use.user->output());
    }
  }
  return count;
}

} // namespace

OverlapMarks collectOverlapMarks(const jit::Graph& graph,
                                 const std::vector<std::string>& libraryPaths) {
  OverlapMarks marks;
  for (const jit::Node* node : graph.nodes()) {
    const bool input = isMarker(*node, kInputMarker);
    if (!input && !isMarker(*node, kOutputMarker)) continue;
    const std::string where = userSourceLocation(*node, libraryPaths).str();
    const jit::Value* marked = node->input(0);
    if (input) {
      POPSIM_CHECK(marked->node()->kind() == c10::prim::Param, ErrorKind::Compilation,
                   "poptorch.set_overlap_for_input applied on a node which is not a tensor input "
                   "to the model. popsim.set_overlap_for_input at ",
                   where,
                   " marks a tensor the model computes; apply it to the model's input tensor "
                   "itself, first thing in forward.");
      POPSIM_CHECK(marked->uses().size() == 1, ErrorKind::Compilation,
                   "poptorch.set_overlap_for_input must be the only op applied to an input. This "
                   "is not the case for input ",
                   marked->debugName(), " to the model. popsim.set_overlap_for_input at ", where,
                   " marks it, but the model also reads the input itself: use the marker's "
                   "result everywhere instead.");
      marks.inputs[marked] = modeOf(*node);
      continue;
    }
    const size_t returns = timesReturned(marked);
    POPSIM_CHECK(returns != 0, ErrorKind::Compilation,
                 "poptorch.set_overlap_for_output applied on a node which is not a tensor output "
                 "to the model. popsim.set_overlap_for_output at ",
                 where,
                 " marks a tensor the model does not return; apply it to returned tensors, just "
                 "before forward returns them.");
    POPSIM_CHECK(returns == 1, ErrorKind::Compilation,
                 "poptorch.set_overlap_for_output cannot be used with a tensor that is returned "
                 "twice. Please check all returned tensors including those nested in "
                 "tuples/lists. The tensor marked at ",
                 where, " is returned ", returns, " times; return it once.");
    marks.outputs[node->output()] = modeOf(*node);
  }
  return marks;
}

} // namespace popsim::frontend
