#pragma once

#include "compiler/passes.h"

namespace popsim::testing {

// Runs one pass on `graph` as the compile pipeline would (the graph verified
// after it when it changed), for the given options; returns whether it
// changed the graph.
inline bool runPass(compiler::Pass& pass, ir::Graph& graph,
                    const compiler::CompilerOptions& options = {},
                    const device::IpuSystemConfig& system = {}) {
  compiler::PassContext context(options, system);
  compiler::PassPipeline pipeline("test");
  struct Borrowed : compiler::Pass {
    explicit Borrowed(compiler::Pass& pass) : pass_(pass) {}
    std::string name() const override { return pass_.name(); }
    bool run(ir::Graph& g, compiler::PassContext& c) override { return pass_.run(g, c); }
    bool isCheck() const override { return pass_.isCheck(); }
    bool optional() const override { return pass_.optional(); }
    compiler::Pass& pass_;
  };
  pipeline.add(std::make_unique<Borrowed>(pass));
  return pipeline.run(graph, context);
}

// Runs passes in order under one pipeline.
inline void runPasses(std::vector<std::unique_ptr<compiler::Pass>> passes, ir::Graph& graph,
                      const compiler::CompilerOptions& options = {},
                      const device::IpuSystemConfig& system = {}) {
  compiler::PassContext context(options, system);
  compiler::PassPipeline pipeline("test");
  for (auto& pass : passes)
    pipeline.add(std::move(pass));
  compiler::runPipeline(pipeline, graph, context);
}

} // namespace popsim::testing
