#include "runtime/executable.h"

#include "common/check.h"
#include "common/logging.h"
#include "ir/op_schema.h"
#include "ir/state_names.h"
#include "runtime/host_copies.h"
#include "runtime/host_resources.h"
#include "runtime/node_failure.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace popsim::runtime {
namespace {

std::string displayName(const ir::Value& input, size_t index) {
  return input.name().empty() ? "input " + std::to_string(index) : "input '" + input.name() + "'";
}

} // namespace

struct Executable::CallContext {
  const std::vector<TensorView>& inputs;
  const std::vector<TensorView>& outputs;
  std::chrono::steady_clock::time_point start;
};

Executable::~Executable() = default;

void Executable::copyOutput(size_t index, const TensorView& destination,
                            const compiler::OutputCopy& copy) const {
  const ir::Value* output = graph().outputs()[index];
  const size_t bytes = output->type().bytes();
  if (bytes == 0) {
    return;
  }
  const void* source = outputAddresses_[index];
  void* target = static_cast<uint8_t*>(destination.data) + static_cast<size_t>(copy.slot) * bytes;
  if (copy.accumulate) {
    accumulateToHost(target, source, output->type());
  } else {
    copyToHost(target, source, output->type());
  }
}

void Executable::run(const std::vector<TensorView>& inputs,
                     const std::vector<TensorView>& outputs) {
  const auto& graphInputs = graph().inputs();
  POPSIM_CHECK(inputs.size() == graphInputs.size(), ErrorKind::InvalidInput, "the model takes ",
               graphInputs.size(), " tensor input(s) but was given ", inputs.size(), ".");
  const std::vector<ir::TensorType> inputTypes = inputHostTypes();
  for (size_t i = 0; i < inputs.size(); ++i) {
    POPSIM_CHECK(inputs[i].type() == inputTypes[i], ErrorKind::InvalidInput,
                 displayName(*graphInputs[i], i), " has type ", inputs[i].type().str(),
                 " but the model was compiled for ", inputTypes[i].str(), ".");
  }
  if (costOnly()) {
    // Nothing computes: the call is its replay on the clock (outputs unwritten).
    std::lock_guard<std::mutex> device(deviceMutex_);
    wallTimes_.assign(static_cast<size_t>(layout().numIpus()), {});
    lastRunCycles_ = simulation_.call.cycles;
    ran_ = true;
    return;
  }
  const std::vector<ir::TensorType> outputTypes = outputHostTypes();
  POPSIM_ASSERT(outputs.size() == outputTypes.size(), "expected ", outputTypes.size(),
                " output buffers, got ", outputs.size(), ".");
  for (size_t i = 0; i < outputs.size(); ++i) {
    POPSIM_ASSERT(outputs[i].type() == outputTypes[i], "output ", i, " buffer is ",
                  outputs[i].type().str(), ", expected ", outputTypes[i].str(), ".");
  }

  // One call at a time: a call owns the device memory, the channels and the
  // call record (the bindings release the GIL, so Python threads get here).
  std::lock_guard<std::mutex> device(deviceMutex_);
  const CallContext call{inputs, outputs, std::chrono::steady_clock::now()};
  ran_ = false; // a failing call leaves no half-recorded call behind
  wallTimes_.assign(static_cast<size_t>(layout().numIpus()), {});
  try {
    runIpus(call);
  } catch (...) {
    abortReplicas(std::current_exception());
    throw;
  }
  // Every call of a program takes the same simulated time.
  lastRunCycles_ = simulation_.call.cycles;
  ran_ = true;
}

void Executable::joinReplicas(std::shared_ptr<ReplicaGroup> group, int64_t index) {
  std::lock_guard<std::mutex> device(deviceMutex_);
  collectives_ = group->member(index);
  replicaGroup_ = std::move(group);
  collectivesSlot_ = collectives_.get();
}

void Executable::abortReplicas(const std::exception_ptr& failure) {
  if (replicaGroup_ == nullptr) return;
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& error) {
    replicaGroup_->abort(error.what());
  } catch (...) {
    replicaGroup_->abort("an unknown error");
  }
}

void Executable::runIpus(const CallContext& call) {
  if (layout().numIpus() == 1) {
    ThreadCountScope threads(threadsPerIpu_);
    runIpu(0, call);
  } else {
    std::vector<std::thread> workers;
    std::exception_ptr failure;
    std::mutex failureMutex;
    for (int64_t ipu = 0; ipu < layout().numIpus(); ++ipu) {
      workers.emplace_back([&, ipu] {
        try {
          omp_set_num_threads(static_cast<int>(threadsPerIpu_));
          runIpu(ipu, call);
        } catch (const ChannelAborted&) {
          // another IPU failed first
        } catch (...) {
          std::lock_guard<std::mutex> lock(failureMutex);
          if (!failure) failure = std::current_exception();
          for (auto& channel : channels_)
            channel->abort();
          abortReplicas(failure); // its other IPUs may wait in an all-reduce
        }
      });
    }
    for (std::thread& worker : workers)
      worker.join();
    if (failure) {
      for (auto& channel : channels_)
        channel->reset();
      std::rethrow_exception(failure);
    }
  }
}

void Executable::runIpu(int64_t ipu, const CallContext& call) {
  dnnl::stream stream(cpuEngine());
  const auto& order = ipuOrders_[static_cast<size_t>(ipu)];
  std::vector<TaskWallTime>& wallTimes = wallTimes_[static_cast<size_t>(ipu)];
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - call.start).count();
  };
  for (int64_t step = 0; step < compiled().stepsPerCall(); ++step) {
    for (const compiler::ScheduledTask& scheduled : order) {
      const int64_t microBatch = compiled().callMicroBatch(scheduled, step);
      const double start = seconds();
      runTask(scheduled, microBatch, stream, call);
      wallTimes.push_back({ipu, tasks_[scheduled.task].name, step, microBatch, start, seconds()});
    }
  }
  stream.wait();
}

std::vector<TaskWallTime> Executable::lastTaskWallTimes() const {
  std::vector<TaskWallTime> all;
  for (const std::vector<TaskWallTime>& perIpu : wallTimes_) {
    all.insert(all.end(), perIpu.begin(), perIpu.end());
  }
  return all;
}

void Executable::runTask(const compiler::ScheduledTask& scheduled, int64_t microBatch,
                         dnnl::stream& stream, const CallContext& call) {
  const TaskProgram& task = tasks_[scheduled.task];
  const memory::TaskIo& io = simulation_.memory.transfers.tasks[scheduled.task];
  for (size_t i : io.streamedInputs) {
    const ir::TensorType& type = graph().inputs()[i]->type();
    copyToDevice(inputAddresses_[i],
                 static_cast<const uint8_t*>(call.inputs[i].data) +
                     static_cast<size_t>(microBatch) * type.bytes(),
                 type);
  }
  for (const Transfer& restore : task.restores) {
    restore.channel->pop(restore.address);
  }
  for (const Step& item : task.steps) {
    if (item.kernel != nullptr) {
      try {
        item.kernel->run(stream);
      } catch (...) {
        FailureWhen when;
        when.task = task.name;
        when.ipu = layout().tasks()[scheduled.task].ipu;
        when.microBatch = microBatch;
        when.replica = replicaGroup_ != nullptr ? collectives_->replicaIndex() : -1;
        when.doing = strCat(when.replica >= 0 ? strCat("replica ", when.replica, ", ") : "",
                            "task ", task.name, " on IPU", when.ipu,
                            microBatch < 0 ? std::string()
                                           : strCat(", micro-batch ", microBatch, " of the call"));
        rethrowFailureOf(*item.node, when);
      }
    } else {
      item.receive.channel->pop(item.receive.address);
    }
  }
  for (const Transfer& send : task.sends) {
    send.channel->push(send.address);
  }
  for (size_t i : io.producedOutputs) {
    const compiler::OutputCopy copy = compiled().outputCopy(i, microBatch);
    if (copy.slot >= 0) {
      copyOutput(i, call.outputs[i], copy);
    }
  }
  if (layout().tasks()[scheduled.task].kind == compiler::TaskKind::Update && !task.steps.empty()) {
    ++weightsVersions_[static_cast<size_t>(layout().tasks()[scheduled.task].ipu)];
  }
}

const ir::Value& Executable::variableNamed(const std::string& name) const {
  const ir::Value* variable = graph().findWeight(name);
  if (variable == nullptr) {
    variable = graph().findState(name);
  }
  POPSIM_CHECK(variable != nullptr, ErrorKind::InvalidInput,
               "the compiled model has no weight or state '", name, "'.");
  return *variable;
}

namespace {
std::string describeVariable(const ir::Value& variable) {
  return (variable.role() == ir::ValueRole::Weight ? "weight '" : "state '") + variable.name() +
         "'";
}
} // namespace

void Executable::writeVariable(const std::string& name, const TensorView& source) {
  const ir::Value& variable = variableNamed(name);
  POPSIM_CHECK(source.type() == variable.type(), ErrorKind::InvalidInput,
               describeVariable(variable), " was compiled as ", variable.type().str(),
               " but the host tensor is ", source.type().str(),
               ". Weights cannot change shape or dtype after compilation: call destroy() and "
               "wrap the model again.");
  if (costOnly()) return; // the device holds no values
  std::lock_guard<std::mutex> device(deviceMutex_);
  copyToDevice(memory_->address(&variable), source.data, variable.type());
  if (variable.role() == ir::ValueRole::State) {
    for (int64_t ipu = 0; ipu < options().system.numIpus; ++ipu) {
      if (const ir::Value* replica = graph().findState(ir::replicaStateName(name, ipu))) {
        copyToDevice(memory_->address(replica), source.data, variable.type());
      }
    }
  }
  for (uint64_t& version : weightsVersions_)
    ++version;
}

void Executable::readVariable(const std::string& name, const TensorView& destination) const {
  const ir::Value& variable = variableNamed(name);
  POPSIM_CHECK(destination.type() == variable.type(), ErrorKind::InvalidInput,
               describeVariable(variable), " is ", variable.type().str(),
               " but the host tensor is ", destination.type().str(), ".");
  POPSIM_CHECK(!costOnly(), ErrorKind::InvalidInput, describeVariable(variable),
               " has no value: the model was compiled cost-only (Simulator.costOnly), so the "
               "device computes and holds nothing. Compile it without costOnly to read values.");
  std::lock_guard<std::mutex> device(deviceMutex_);
  copyToHost(destination.data, memory_->address(&variable), variable.type());
}

} // namespace popsim::runtime
