#include "runtime/hyperparameters.h"

#include "common/check.h"
#include "compiler/training/training_config.h"
#include "ir/state_names.h"

#include <vector>

namespace popsim::runtime {

void writeHyperparameters(Executable& executable, size_t group,
                          const std::map<std::string, double>& values) {
  const std::string name = ir::groupStateName(group, "hyper");
  if (executable.graph().findState(name) == nullptr) {
    return; // no parameter of this group reaches the loss
  }
  std::vector<double> packed;
  for (const std::string& key :
       compiler::hyperParameterNames(executable.options().compiler.training.optimizer)) {
    auto it = values.find(key);
    POPSIM_CHECK(it != values.end(), ErrorKind::InvalidOption, "hyper-parameter '", key,
                 "' is missing for group ", group, ".");
    packed.push_back(it->second);
  }
  executable.writeVariable(
      name, {packed.data(), ir::DType::Float64, {static_cast<int64_t>(packed.size())}});
}

} // namespace popsim::runtime
