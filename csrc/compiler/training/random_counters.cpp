// Fresh random numbers for every micro-batch. Random ops (dropout, random
// draws) read the random counter state in the forward pass:
// 1. each IPU with random ops gets its own copy of the counter (the first
//    IPU keeps the state itself, the others a replica of it), which its ops
//    read;
// 2. each IPU advances its copy after its last random op of a micro-batch,
//    in the forward pass: pipelined IPUs run several forward passes before
//    the matching backward passes, and each must draw the numbers of its own
//    micro-batch.
// Training and inference programs both run it.

#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"

#include <map>

namespace popsim::compiler {
namespace {

bool advanceRandomCounters(ir::Graph& graph, PassContext&) {
  ir::Value* counter = graph.findState(ir::kRandomCounterName);
  if (counter == nullptr) return false;
  std::map<int64_t, const ir::Node*> lastReader;
  std::vector<ir::Node*> readers(counter->users().begin(), counter->users().end());
  for (const ir::Node* reader : readers) {
    lastReader[reader->placement().ipu] = reader; // users are in graph order
  }
  training::ReplicatedState counters(graph, counter);
  for (ir::Node* reader : readers) {
    ir::Value* local = counters.on(reader->placement().ipu);
    for (size_t i = 0; i < reader->inputs().size(); ++i) {
      if (reader->input(i) == counter && local != counter) graph.replaceInput(reader, i, local);
    }
  }
  for (const auto& [ipu, reader] : lastReader) {
    training::increment(graph, counters.on(ipu),
                        training::inPhase(reader->placement(), ir::Phase::Forward));
  }
  return true;
}

} // namespace

std::unique_ptr<Pass> createRandomCountersPass() {
  return std::make_unique<FunctionPass>("random-counters", advanceRandomCounters);
}

} // namespace popsim::compiler
