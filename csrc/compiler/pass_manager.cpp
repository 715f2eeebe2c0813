#include "compiler/pass_manager.h"

#include "compiler/passes.h"

#include "common/check.h"
#include "common/logging.h"
#include "common/strings.h"
#include "ir/parser.h"
#include "ir/verifier.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

namespace popsim::compiler {
namespace {

// Every leaf pass of `pipeline`.
void collectLeaves(const PassPipeline& pipeline, std::vector<const Pass*>& leaves) {
  for (const auto& pass : pipeline.passes()) {
    if (const auto* nested = dynamic_cast<const PassPipeline*>(pass.get())) {
      collectLeaves(*nested, leaves);
    } else {
      leaves.push_back(pass.get());
    }
  }
}

} // namespace

const TaskLayout& PassContext::layout(const ir::Graph& graph) {
  if (!layout_.has_value()) layout_.emplace(graph, trainingProgram());
  return *layout_;
}

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

bool PassPipeline::run(ir::Graph& graph, PassContext& context) {
  bool changed = false;
  for (const auto& pass : passes_) {
    const std::string name = pass->name();
    if (context.disabled().count(name) != 0) {
      POPSIM_LOG(Warn) << "pass " << name << " skipped (POPSIM_DISABLE_PASSES)";
      continue;
    }
    const bool nested = dynamic_cast<const PassPipeline*>(pass.get()) != nullptr;
    const auto start = std::chrono::steady_clock::now();
    const bool passChanged = pass->run(graph, context);
    changed = changed || passChanged;
    if (nested || pass->isCheck()) continue; // its own passes verified and dumped themselves
    if (passChanged) {
      context.invalidate();
      ir::verifyGraph(graph, "pass '" + name + "'");
      if (context.checksText()) ir::checkTextRoundTrip(graph, "pass '" + name + "'");
    }
    if (context.dump().enabled()) context.dump().write(graph, settingsOf(context), name);
    const auto elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    POPSIM_LOG(Debug) << "pass " << name << ": " << elapsed.count() << " ms, "
                      << graph.nodes().size() << " nodes" << (passChanged ? "" : " (unchanged)");
  }
  return changed;
}

std::string PassPipeline::describe(int indent) const {
  std::ostringstream out;
  for (const auto& pass : passes_) {
    out << std::string(static_cast<size_t>(indent), ' ') << pass->name();
    if (const auto* nested = dynamic_cast<const PassPipeline*>(pass.get())) {
      out << ":\n" << nested->describe(indent + 2);
      continue;
    }
    out << (pass->isCheck() ? " (check)" : pass->optional() ? " (optional)" : "") << "\n";
  }
  return out.str();
}

std::vector<std::string> PassPipeline::passNames() const {
  std::vector<const Pass*> leaves;
  collectLeaves(*this, leaves);
  std::vector<std::string> names;
  for (const Pass* pass : leaves)
    names.push_back(pass->name());
  return names;
}

void runPipeline(PassPipeline& pipeline, ir::Graph& graph, PassContext& context) {
  std::vector<const Pass*> leaves;
  collectLeaves(pipeline, leaves);
  for (const std::string& name : context.disabled()) {
    for (const Pass* pass : leaves) {
      POPSIM_CHECK_OPTION(
          pass->name() != name || pass->optional(), "POPSIM_DISABLE_PASSES",
          "POPSIM_DISABLE_PASSES names '", name,
          "', which the program cannot run without. Passes that can be switched off: ",
          join(optionalPassNames(), ", "), ".");
    }
  }
  ir::verifyGraph(graph, "import");
  if (context.checksText()) ir::checkTextRoundTrip(graph, "import");
  if (context.dump().enabled() && context.dump().written() == 0) {
    context.dump().write(graph, settingsOf(context), "import");
  }
  pipeline.run(graph, context);
}

bool textChecksFromEnvironment() {
  const char* check = std::getenv("POPSIM_CHECK_IR_TEXT");
  return check != nullptr && std::string(check) == "1";
}

std::set<std::string> disabledPassesFromEnvironment() {
  std::set<std::string> names;
  const char* list = std::getenv("POPSIM_DISABLE_PASSES");
  if (list == nullptr) return names;
  std::string name;
  std::istringstream in(list);
  while (std::getline(in, name, ',')) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) continue;
    const std::vector<std::string> known = allPassNames();
    POPSIM_CHECK_OPTION(std::find(known.begin(), known.end(), name) != known.end(),
                        "POPSIM_DISABLE_PASSES", "POPSIM_DISABLE_PASSES names '", name,
                        "', which is not a pass. Passes that can be switched off: ",
                        join(optionalPassNames(), ", "), ".");
    names.insert(name);
  }
  return names;
}

} // namespace popsim::compiler
