#pragma once

#include "compiler/pass.h"

#include <memory>
#include <string>
#include <vector>

namespace popsim::compiler {

// Passes run in order as one pass: the compiler is a pipeline of pipelines
// (compile > training-program > autodiff, ...). Each transformation that
// changed the graph is followed by the verifier, so that a broken pass is
// reported by name instead of as a wrong result much later; each is written
// to the context's IR dump (numbered, by its own name) when dumps are on.
// Passes the context disables are skipped, with a log line.
class PassPipeline : public Pass {
public:
  explicit PassPipeline(std::string name) : name_(std::move(name)) {}
  PassPipeline& add(std::unique_ptr<Pass> pass);
  std::string name() const override { return name_; }
  bool run(ir::Graph& graph, PassContext& context) override;
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }
  // The pipeline as text: a pass per line, nested pipelines indented, checks
  // and optional passes marked.
  std::string describe(int indent = 0) const;
  // The names of every pass in it, nested ones included.
  std::vector<std::string> passNames() const;

private:
  std::string name_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

// Runs `pipeline` on `graph`: verifies the graph first (and dumps it as
// "import"), after checking that every name the context disables is a pass
// that may be switched off.
void runPipeline(PassPipeline& pipeline, ir::Graph& graph, PassContext& context);

// Whether POPSIM_CHECK_IR_TEXT=1 asks for the IR text round trip
// (ir::checkTextRoundTrip) after every pass.
bool textChecksFromEnvironment();

// The passes POPSIM_DISABLE_PASSES names (comma-separated; empty: none).
std::set<std::string> disabledPassesFromEnvironment();

} // namespace popsim::compiler
