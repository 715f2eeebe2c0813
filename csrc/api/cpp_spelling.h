#pragma once

#include <string>

namespace popsim::api {

// A message of the core (written as Python's API spells things, since both
// languages share it) as a C++ user reads it: popsim.ShardedExecution ->
// popsim::ShardedExecution, (True) -> (true), torch.Size([2, 3]) -> [2, 3],
// and advice on Python-only annotations (popsim.Block) -> what the C++ API
// offers (an execution strategy over module paths). Names the model's own
// Python code uses (torch.where, popsim.identity_loss) stay: a TorchScript
// model is written in Python. "Python's popsim.trainingModel" stays too.
std::string inCppSpelling(std::string text);

} // namespace popsim::api
