// popsim::Session (include/popsim/session.h): what inference and training
// sessions share, over their api::CompiledModule.
#include "api/error_classes.h"
#include "api/session_state.h"
#include "ir/printer.h"
#include "profile/call_trace.h"

namespace popsim {

Session::Session() : state_(std::make_unique<State>()) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

MemoryReport Session::memoryReport() const {
  const memory::MemoryReport& core = state_->compiled->executable().memoryReport();
  MemoryReport report;
  report.chip = core.chip;
  for (const memory::IpuMemoryReport& ipu : core.ipus) {
    report.ipus.push_back({ipu.ipu, ipu.capacity, ipu.total(), ipu.categories, ipu.largestTensors,
                           ipu.ioTileBytes, ipu.ioTileCapacity});
  }
  return report;
}

uint64_t Session::cycleCount() const { return state_->compiled->executable().lastRunCycles(); }

double Session::simulatedTime() const {
  return static_cast<double>(cycleCount()) / state_->compiled->clockHz();
}

ExecutionTrace Session::executionTrace() const {
  return profile::callTraceOf(state_->compiled->executable());
}

PerfCounters Session::perfCounters() const {
  const auto inputs = static_cast<int64_t>(state_->compiled->executable().inputHostTypes().size());
  return executionTrace().perfCounters(inputs);
}

void Session::copyWeightsToDevice() {
  api::withErrorClasses([&] {
    state_->compiled->copyWeightsToDevice();
    return 0;
  });
}

void Session::copyWeightsToHost() {
  api::withErrorClasses([&] {
    state_->compiled->copyWeightsToHost();
    return 0;
  });
}

std::vector<std::string> Session::weightNames() const { return state_->compiled->weightNames(); }

const Options& Session::options() const { return state_->compiled->options(); }

torch::jit::Module& Session::module() { return state_->compiled->module(); }

SizingReport Session::sizingReport() const {
  return api::withErrorClasses([&] { return state_->compiled->sizingReport(); });
}

std::string Session::profileDirectory() const { return state_->compiled->profileDirectory(); }

at::Tensor Session::getAnchoredTensor(const std::string& shortName) const {
  return api::withErrorClasses([&] { return state_->compiled->anchoredTensor(shortName); });
}

std::vector<std::string> Session::getTensorNames() const { return state_->compiled->tensorNames(); }

std::string Session::programText() const {
  return ir::printGraph(state_->compiled->executable().graph(), {true, false});
}

} // namespace popsim
