#include "compiler/pass_manager.h"

#include "common/logging.h"
#include "ir/verifier.h"

#include <chrono>

namespace popsim::compiler {

PassManager& PassManager::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

void PassManager::run(ir::Graph& graph) const {
  ir::verifyGraph(graph, "import");
  if (dump_ != nullptr && dump_->written() == 0) {
    dump_->write(graph, "import");
  }
  for (const auto& pass : passes_) {
    const auto start = std::chrono::steady_clock::now();
    pass->run(graph);
    ir::verifyGraph(graph, "pass '" + pass->name() + "'");
    if (dump_ != nullptr) {
      dump_->write(graph, pass->name());
    }
    const auto elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    POPSIM_LOG(Debug) << "pass " << pass->name() << ": " << elapsed.count() << " ms, "
                      << graph.nodes().size() << " nodes";
  }
}

} // namespace popsim::compiler
