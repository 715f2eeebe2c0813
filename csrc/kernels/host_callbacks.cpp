#include "kernels/host_callbacks.h"

#include "common/check.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace popsim::kernels {
namespace {

struct Registry {
  std::mutex mutex;
  // Shared, so a call keeps its function alive while it is replaced.
  std::map<std::string, std::shared_ptr<const HostFunction>> functions;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

} // namespace

void registerHostFunction(const std::string& id, HostFunction function) {
  auto shared = std::make_shared<const HostFunction>(std::move(function));
  std::shared_ptr<const HostFunction> previous;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    previous = std::exchange(registry().functions[id], std::move(shared));
  }
  // `previous` dies here, outside the lock (its captures may take other locks).
}

void clearHostFunctions() {
  std::map<std::string, std::shared_ptr<const HostFunction>> functions;
  std::lock_guard<std::mutex> lock(registry().mutex);
  functions.swap(registry().functions);
}

void hostCall(const ir::Node& node, const std::vector<void*>& inputs,
              const std::vector<void*>& outputs) {
  const std::string& id = node.attrs().getString("id");
  std::shared_ptr<const HostFunction> function;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    const auto found = registry().functions.find(id);
    if (found != registry().functions.end()) function = found->second;
  }
  POPSIM_CHECK(function != nullptr, ErrorKind::Execution, "The CPU op '", id,
               "' has no function registered on the host: create the popsim.CPU(fn, '", id,
               "') op in the process that runs the model.");
  std::vector<HostTensor> in;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back({inputs[i], node.input(i)->type()});
  std::vector<HostTensor> out;
  for (size_t i = 0; i < outputs.size(); ++i)
    out.push_back({outputs[i], node.outputs()[i]->type()});
  (*function)(in, out);
}

} // namespace popsim::kernels
