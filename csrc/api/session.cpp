// popsim::Session (include/popsim/session.h): what inference and training
// sessions share, over their api::CompiledModule.
#include "api/cpp_spelling.h"
#include "api/error_classes.h"
#include "api/session_state.h"
#include "ir/printer.h"
#include "profile/call_trace.h"

namespace popsim {

Session::Session() : state_(std::make_unique<State>()) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session::State& Session::state() const {
  if (state_ == nullptr || state_->compiled == nullptr) {
    api::throwAsErrorClass(CoreError(ErrorKind::InvalidInput,
                                     "This popsim session was moved from (std::move): its compiled "
                                     "model now belongs to the session it was moved into. Use that "
                                     "session."));
  }
  return *state_;
}

c10::IValue Session::forward(const Inputs& inputs) {
  return api::withErrorClasses([&] {
    api::CompiledModule& compiled = *state().compiled;
    return compiled.nested(compiled.run(inputs.values()));
  });
}

MemoryReport Session::memoryReport() const {
  const memory::MemoryReport& core = state().compiled->executable().memoryReport();
  MemoryReport report;
  report.chip = core.chip;
  for (const memory::IpuMemoryReport& ipu : core.ipus) {
    report.ipus.push_back({ipu.ipu, ipu.capacity, ipu.total(), ipu.categories, ipu.largestTensors,
                           ipu.ioTileBytes, ipu.ioTileCapacity});
  }
  return report;
}

uint64_t Session::cycleCount() const { return state().compiled->executable().lastRunCycles(); }

double Session::simulatedTime() const {
  return static_cast<double>(cycleCount()) / state().compiled->clockHz();
}

ExecutionTrace Session::executionTrace() const {
  return profile::callTraceOf(state().compiled->executable());
}

PerfCounters Session::perfCounters() const {
  const auto inputs = static_cast<int64_t>(state().compiled->executable().inputHostTypes().size());
  return executionTrace().perfCounters(inputs, options().replicationFactor());
}

void Session::copyWeightsToDevice() {
  api::withErrorClasses([&] {
    state().compiled->copyWeightsToDevice();
    return 0;
  });
}

void Session::copyWeightsToHost() {
  api::withErrorClasses([&] {
    state().compiled->copyWeightsToHost();
    return 0;
  });
}

std::vector<std::string> Session::weightNames() const { return state().compiled->weightNames(); }

const Options& Session::options() const { return state().compiled->options(); }

torch::jit::Module& Session::module() { return state().compiled->module(); }

SizingReport Session::sizingReport() const {
  return api::withErrorClasses([&] {
    SizingReport report = state().compiled->sizingReport();
    for (std::string& advice : report.advice)
      advice = api::inCppSpelling(std::move(advice));
    return report;
  });
}

std::string Session::profileDirectory() const { return state().compiled->profileDirectory(); }

int64_t Session::combinedBatchSize() const {
  return api::withErrorClasses([&] { return state().compiled->combinedBatchSize(); });
}

at::Tensor Session::getAnchoredTensor(const std::string& shortName) const {
  return api::withErrorClasses([&] { return state().compiled->anchoredTensor(shortName); });
}

std::vector<std::string> Session::getTensorNames() const { return state().compiled->tensorNames(); }

std::string Session::programText() const {
  return ir::printGraph(state().compiled->executable().graph(), {true, false});
}

} // namespace popsim
