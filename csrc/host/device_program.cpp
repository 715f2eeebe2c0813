#include "host/device_program.h"

#include "common/check.h"
#include "ir/state_names.h"
#include "runtime/hyperparameters.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

namespace popsim::host {
namespace {

// What a replica stopped by another's failure says (runtime/replica_group.cpp):
// the failure to report is the other one.
constexpr const char* kStoppedByAnother = "because another replica failed";
// Each replica's random counter starts 2^40 micro-batches from the next one's.
constexpr int kCounterRangeBits = 40;

const ir::Value& variableOf(const runtime::Executable& executable, const std::string& name) {
  const ir::Value* variable = executable.graph().findWeight(name);
  if (variable == nullptr) variable = executable.graph().findState(name);
  POPSIM_CHECK(variable != nullptr, ErrorKind::InvalidInput,
               "the compiled model has no weight or state '", name, "'.");
  return *variable;
}

// A host buffer of a type, with its view.
struct Buffer {
  std::vector<std::byte> bytes;
  runtime::TensorView view;
  explicit Buffer(const ir::TensorType& type)
      : bytes(static_cast<size_t>(type.numel()) * ir::elementSize(type.dtype)), view{bytes.data(),
                                                                                     type.dtype,
                                                                                     type.shape} {}
};

void checkCallTypes(const std::vector<runtime::TensorView>& views,
                    const std::vector<ir::TensorType>& expected, const char* what) {
  POPSIM_CHECK(views.size() == expected.size(), ErrorKind::InvalidInput, "the model takes ",
               expected.size(), " tensor ", what, "(s) but was given ", views.size(), ".");
  for (size_t i = 0; i < views.size(); ++i) {
    POPSIM_CHECK(views[i].type() == expected[i], ErrorKind::InvalidInput, what, " ", i,
                 " has type ", views[i].type().str(), " but the model was compiled for ",
                 expected[i].str(), ".");
  }
}

// A program that computes: one executable per local replica.
class ComputingProgram final : public DeviceProgram {
public:
  ComputingProgram(std::vector<std::shared_ptr<runtime::Executable>> replicas, CallLayout layout,
                   std::shared_ptr<runtime::ReplicaGroup> group, int64_t firstIndex,
                   int64_t jobReplicas, std::shared_ptr<CrossProcess> crossProcess)
      : DeviceProgram(std::move(replicas), std::move(layout)), group_(std::move(group)),
        firstIndex_(firstIndex), jobReplicas_(jobReplicas), crossProcess_(std::move(crossProcess)),
        counterOffsets_(replicas_.size(), 0) {}

  bool costOnly() const override { return false; }

  void run(const std::vector<runtime::TensorView>& inputs,
           const std::vector<runtime::TensorView>& outputs) override {
    if (group_) group_->reset();
    if (replicas() == 1) { // one replica in this process (of a job of one or more)
      first().run(inputs, outputs);
      return;
    }
    checkCallTypes(inputs, inputTypes(), "input");
    checkCallTypes(outputs, outputTypes(), "output");
    const auto count = static_cast<size_t>(replicas());
    const std::vector<ir::TensorType> outputTypes = first().outputHostTypes();
    std::vector<std::vector<Buffer>> shares(count), results(count);
    for (size_t r = 0; r < count; ++r) {
      for (const runtime::TensorView& input : inputs) {
        shares[r].emplace_back(layout_.replicaInputType(input.type()));
        layout_.copyReplicaInput(input, static_cast<int64_t>(r), shares[r].back().view.data);
      }
      for (const ir::TensorType& type : outputTypes)
        results[r].emplace_back(type);
    }
    std::vector<std::exception_ptr> failures(count);
    const auto runReplica = [&](size_t r) {
      try {
        std::vector<runtime::TensorView> in, out;
        for (const Buffer& buffer : shares[r])
          in.push_back(buffer.view);
        for (const Buffer& buffer : results[r])
          out.push_back(buffer.view);
        replicas_[r]->run(in, out);
      } catch (...) {
        failures[r] = std::current_exception();
      }
    };
    std::vector<std::thread> others;
    for (size_t r = 1; r < count; ++r)
      others.emplace_back(runReplica, r);
    runReplica(0);
    for (std::thread& thread : others)
      thread.join();
    rethrowFirstFailure(failures);
    for (size_t r = 0; r < count; ++r) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        layout_.copyReplicaOutput(i, results[r][i].view.data, outputTypes[i],
                                  static_cast<int64_t>(r), outputs[i]);
      }
    }
  }

  void writeVariables(const std::map<std::string, runtime::TensorView>& values) override {
    for (const auto& [name, value] : values) {
      POPSIM_CHECK(value.type() == variableType(name), ErrorKind::InvalidInput, "variable '", name,
                   "' was compiled as ", variableType(name).str(), " but the host tensor is ",
                   value.type().str(), ".");
    }
    for (size_t r = 0; r < replicas_.size(); ++r) {
      for (const auto& [name, value] : values) {
        writeReplica(r, name, value);
      }
    }
  }

  void readVariables(const std::map<std::string, runtime::TensorView>& values) override {
    for (const auto& [name, value] : values) { // (sorted: the same order in every process)
      POPSIM_CHECK(value.type() == variableType(name), ErrorKind::InvalidInput, "variable '", name,
                   "' is ", variableType(name).str(), " but the host tensor is ",
                   value.type().str(), ".");
      if (sharded_.count(name) != 0) {
        readSharded(name, value);
      } else if (grouped_.count(name) != 0) {
        readGrouped(name, value);
      } else {
        first().readVariable(name, value);
        if (name == ir::kRandomCounterName)
          *static_cast<int64_t*>(value.data) -= counterOffsets_[0];
      }
    }
  }

  void writeHyperparameters(size_t group, const std::map<std::string, double>& values) override {
    for (const auto& replica : replicas_)
      runtime::writeHyperparameters(*replica, group, values);
  }

  void broadcast(const std::vector<std::string>& names) override {
    if (names.empty()) return;
    std::map<std::string, Buffer> values;
    for (const std::string& name : names) {
      const ir::TensorType type = variableOf(first(), name).type();
      Buffer& buffer = values.emplace(name, Buffer(type)).first->second;
      first().readVariable(name, buffer.view);
    }
    size_t from = 1;
    if (acrossProcesses()) {
      for (auto& [name, buffer] : values) // sorted: the same order in every process
        crossProcess_->broadcastFromFirst(buffer.view);
      from = 0;
    }
    for (size_t r = from; r < replicas_.size(); ++r) {
      for (const auto& [name, buffer] : values)
        replicas_[r]->writeVariable(name, buffer.view);
    }
  }

  void drawApart(int64_t process) override {
    if (first().graph().findState(ir::kRandomCounterName) == nullptr) return;
    int64_t counter = 0;
    const runtime::TensorView view{&counter, ir::DType::Int64, {}};
    readVariables({{ir::kRandomCounterName, view}});
    const auto count = static_cast<int64_t>(replicas_.size());
    for (int64_t index = 0; index < count; ++index) {
      counterOffsets_[static_cast<size_t>(index)] = (process * count + index) << kCounterRangeBits;
    }
    writeVariables({{ir::kRandomCounterName, view}});
  }

private:
  bool acrossProcesses() const { return crossProcess_ != nullptr; }

  static void rethrowFirstFailure(const std::vector<std::exception_ptr>& failures) {
    std::exception_ptr chosen;
    for (const std::exception_ptr& failure : failures) {
      if (!failure) continue;
      if (!chosen) chosen = failure;
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        // The replica that failed first, not one it stopped.
        if (std::string(error.what()).find(kStoppedByAnother) == std::string::npos) {
          std::rethrow_exception(failure);
        }
      } catch (...) {
        std::rethrow_exception(failure);
      }
    }
    if (chosen) std::rethrow_exception(chosen);
  }

  void writeReplica(size_t r, const std::string& name, const runtime::TensorView& value) {
    runtime::Executable& replica = *replicas_[r];
    const ir::TensorType type = variableOf(replica, name).type();
    if (sharded_.count(name) != 0) {
      // This replica's shard: flattened, zero-padded to a multiple of the
      // job's replicas, as the program shards it.
      Buffer shard(type);
      const size_t element = ir::elementSize(type.dtype);
      const size_t begin = static_cast<size_t>(firstIndex_ + static_cast<int64_t>(r)) *
                           static_cast<size_t>(type.numel()) * element;
      const size_t end = std::min(value.bytes(), begin + shard.bytes.size());
      std::fill(shard.bytes.begin(), shard.bytes.end(), std::byte{0});
      if (begin < end) {
        std::memcpy(shard.bytes.data(), static_cast<const std::byte*>(value.data) + begin,
                    end - begin);
      }
      replica.writeVariable(name, shard.view);
    } else if (grouped_.count(name) != 0) {
      // Its group's row.
      const int64_t group =
          grouped_.at(name).at(static_cast<size_t>(firstIndex_ + static_cast<int64_t>(r)));
      runtime::TensorView row{static_cast<std::byte*>(value.data) + static_cast<size_t>(group) *
                                                                        type.numel() *
                                                                        ir::elementSize(type.dtype),
                              type.dtype, type.shape};
      replica.writeVariable(name, row);
    } else if (name == ir::kRandomCounterName) {
      int64_t counter = *static_cast<const int64_t*>(value.data) + counterOffsets_[r];
      replica.writeVariable(name, {&counter, ir::DType::Int64, {}});
    } else {
      replica.writeVariable(name, value);
    }
  }

  void readSharded(const std::string& name, const runtime::TensorView& destination) {
    const ir::TensorType shardType = variableOf(first(), name).type();
    ir::TensorType local = shardType;
    local.shape = {shardType.numel() * replicas()};
    Buffer joined(local);
    const size_t shardBytes =
        static_cast<size_t>(shardType.numel()) * ir::elementSize(shardType.dtype);
    for (size_t r = 0; r < replicas_.size(); ++r) {
      replicas_[r]->readVariable(
          name, {joined.bytes.data() + r * shardBytes, shardType.dtype, shardType.shape});
    }
    const Buffer* all = &joined;
    std::optional<Buffer> gathered;
    if (acrossProcesses()) {
      ir::TensorType job = local;
      job.shape = {shardType.numel() * jobReplicas_};
      gathered.emplace(job);
      crossProcess_->gather(joined.view, gathered->view);
      all = &*gathered;
    }
    std::memcpy(destination.data, all->bytes.data(), destination.bytes());
  }

  void readGrouped(const std::string& name, const runtime::TensorView& destination) {
    const std::vector<int64_t>& job = grouped_.at(name);
    const int64_t groups = 1 + *std::max_element(job.begin(), job.end());
    const auto count = static_cast<int64_t>(replicas_.size());
    const ir::TensorType rowType = variableOf(first(), name).type();
    const size_t rowBytes = static_cast<size_t>(rowType.numel()) * ir::elementSize(rowType.dtype);
    // Each group's value, from its first replica (in whichever process holds it).
    std::vector<int64_t> owners;
    for (int64_t group = 0; group < groups; ++group) {
      owners.push_back(std::find(job.begin(), job.end(), group) - job.begin());
    }
    ir::TensorType rowsType = rowType;
    rowsType.shape.insert(rowsType.shape.begin(), groups);
    Buffer rows(rowsType); // this process's rows; zeros where another process holds the group
    std::fill(rows.bytes.begin(), rows.bytes.end(), std::byte{0});
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t owner = owners[static_cast<size_t>(group)];
      if (owner >= firstIndex_ && owner < firstIndex_ + count) {
        replicas_[static_cast<size_t>(owner - firstIndex_)]->readVariable(
            name, {rows.bytes.data() + static_cast<size_t>(group) * rowBytes, rowType.dtype,
                   rowType.shape});
      }
    }
    if (!acrossProcesses()) {
      std::memcpy(destination.data, rows.bytes.data(), destination.bytes());
      return;
    }
    ir::TensorType everyType = rowsType;
    everyType.shape[0] = groups * (jobReplicas_ / count);
    Buffer every(everyType); // process p's rows at p x groups
    crossProcess_->gather(rows.view, every.view);
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t process = owners[static_cast<size_t>(group)] / count;
      std::memcpy(static_cast<std::byte*>(destination.data) + static_cast<size_t>(group) * rowBytes,
                  every.bytes.data() + static_cast<size_t>(process * groups + group) * rowBytes,
                  rowBytes);
    }
  }

  std::shared_ptr<runtime::ReplicaGroup> group_;
  int64_t firstIndex_;
  int64_t jobReplicas_;
  std::shared_ptr<CrossProcess> crossProcess_;
  // Where each replica's random counter starts (drawApart).
  std::vector<int64_t> counterOffsets_;
};

// A cost-only program: one executable stands for every replica.
class CostOnlyProgram final : public DeviceProgram {
public:
  CostOnlyProgram(std::shared_ptr<runtime::Executable> executable, CallLayout layout)
      : DeviceProgram({std::move(executable)}, std::move(layout)) {}

  bool costOnly() const override { return true; }

  void run(const std::vector<runtime::TensorView>& inputs,
           const std::vector<runtime::TensorView>& outputs) override {
    if (replicas() == 1) {
      first().run(inputs, outputs);
      return;
    }
    checkCallTypes(inputs, inputTypes(), "input");
    // Replica 0's share of the inputs' types: the values are never read.
    std::vector<runtime::TensorView> share;
    for (const runtime::TensorView& input : inputs) {
      const ir::TensorType type = layout_.replicaInputType(input.type());
      share.push_back({nullptr, type.dtype, type.shape});
    }
    first().run(share, {});
  }

  void writeVariables(const std::map<std::string, runtime::TensorView>& values) override {
    for (const auto& [name, value] : values)
      first().writeVariable(name, value); // checked, then dropped
  }

  void readVariables(const std::map<std::string, runtime::TensorView>& values) override {
    for (const auto& [name, value] : values)
      first().readVariable(name, value); // refused: nothing was computed
  }

  void writeHyperparameters(size_t group, const std::map<std::string, double>& values) override {
    runtime::writeHyperparameters(first(), group, values); // checked, then dropped
  }

  void broadcast(const std::vector<std::string>&) override {}
  void drawApart(int64_t) override {}
};

} // namespace

DeviceProgram::DeviceProgram(std::vector<std::shared_ptr<runtime::Executable>> replicas,
                             CallLayout layout)
    : replicas_(std::move(replicas)), layout_(std::move(layout)) {}

std::vector<ir::TensorType> DeviceProgram::inputTypes() const {
  std::vector<ir::TensorType> types = first().inputHostTypes();
  if (replicas() == 1) return types;
  for (ir::TensorType& type : types) {
    if (!type.shape.empty()) type.shape[0] *= layout_.inputParts();
  }
  return types;
}

std::vector<ir::TensorType> DeviceProgram::outputTypes() const {
  std::vector<ir::TensorType> types = first().outputHostTypes();
  if (replicas() == 1) return types;
  for (ir::TensorType& type : types)
    type = layout_.callOutputType(type);
  return types;
}

void DeviceProgram::shardVariables(std::map<std::string, ir::Shape> wholeShapes) {
  sharded_ = std::move(wholeShapes);
}

void DeviceProgram::groupVariables(std::map<std::string, std::vector<int64_t>> jobGroups) {
  grouped_ = std::move(jobGroups);
}

ir::TensorType DeviceProgram::variableType(const std::string& name) const {
  ir::TensorType type = variableOf(first(), name).type();
  if (auto found = sharded_.find(name); found != sharded_.end()) {
    type.shape = found->second;
  } else if (auto group = grouped_.find(name); group != grouped_.end()) {
    type.shape.insert(type.shape.begin(),
                      1 + *std::max_element(group->second.begin(), group->second.end()));
  }
  return type;
}

std::vector<std::string> DeviceProgram::weightNames() const {
  std::vector<std::string> names;
  for (const ir::Value* weight : first().weights())
    names.push_back(weight->name());
  return names;
}

std::vector<std::string> DeviceProgram::stateNames() const {
  std::vector<std::string> names;
  for (const ir::Value* state : first().states()) {
    // Replicas on other IPUs follow their state (Executable::writeVariable).
    if (!ir::isStateReplica(state->name())) names.push_back(state->name());
  }
  return names;
}

std::unique_ptr<DeviceProgram>
makeDeviceProgram(std::shared_ptr<runtime::Executable> executable, const Replication& replication,
                  CallLayout layout, runtime::ReplicaGroup::CrossProcessSum crossProcessSum,
                  std::shared_ptr<CrossProcess> crossProcess) {
  if (executable->costOnly()) {
    return std::make_unique<CostOnlyProgram>(std::move(executable), std::move(layout));
  }
  if (replication.job() == 1) {
    return std::make_unique<ComputingProgram>(
        std::vector<std::shared_ptr<runtime::Executable>>{std::move(executable)}, std::move(layout),
        nullptr, 0, 1, nullptr);
  }
  std::vector<std::shared_ptr<runtime::Executable>> replicas{executable};
  const std::string program = executable->serializeProgram();
  for (int64_t r = 1; r < replication.local; ++r) {
    replicas.push_back(runtime::Executable::load(program, executable->options()));
  }
  const bool severalProcesses = replication.processes > 1;
  auto group = std::make_shared<runtime::ReplicaGroup>(
      replication.local,
      severalProcesses ? std::move(crossProcessSum) : runtime::ReplicaGroup::CrossProcessSum{},
      replication.first, replication.job());
  for (size_t r = 0; r < replicas.size(); ++r)
    replicas[r]->joinReplicas(group, static_cast<int64_t>(r));
  return std::make_unique<ComputingProgram>(std::move(replicas), std::move(layout),
                                            std::move(group), replication.first, replication.job(),
                                            severalProcesses ? std::move(crossProcess) : nullptr);
}

} // namespace popsim::host
