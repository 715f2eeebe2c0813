#pragma once

// A compiled program on its simulated device, as a session uses it: the one
// place that knows whether the device computes and how many replicas run it.
// Both faces (Python's executor and the C++ sessions) call, write and read
// variables through it, with a call's whole batch and a variable's whole
// value; the device program splits and joins them. makeDeviceProgram chooses
// the implementation once:
// - ComputingProgram: one executable per local replica of the job (the
//   first compiled, the others loaded from its program), which meet in a
//   runtime::ReplicaGroup to sum gradients and run every call together on
//   host threads; writes go to every replica, reads come from replica 0 (or
//   gather shards and groups);
// - CostOnlyProgram: one cost-only executable stands for every replica; a
//   call replays the simulated clock and writes no output, writes are checked
//   and dropped, and reads are refused.

#include "host/call_layout.h"
#include "host/replication.h"
#include "runtime/executable.h"
#include "runtime/replica_group.h"
#include "runtime/tensor_view.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace popsim::host {

// The other processes of a distributed job, for what crosses them besides
// gradient sums (which runtime::ReplicaGroup's CrossProcessSum does): Python
// implements it with torch.distributed (Gloo). Every process calls each
// method at the same point, in the same order.
class CrossProcess {
public:
  virtual ~CrossProcess() = default;
  // Every process's `mine` (all of one type), joined along dimension 0 in
  // process order into `all` (processes times mine's rows).
  virtual void gather(const runtime::TensorView& mine, const runtime::TensorView& all) = 0;
  // Process 0's `value`, written over every process's.
  virtual void broadcastFromFirst(const runtime::TensorView& value) = 0;
};

class DeviceProgram {
public:
  virtual ~DeviceProgram() = default;
  // Replica 0's executable: memory reports, the clock, traces and profiles
  // read it (every replica runs the same program).
  runtime::Executable& first() { return *replicas_.front(); }
  const runtime::Executable& first() const { return *replicas_.front(); }
  std::shared_ptr<runtime::Executable> firstShared() const { return replicas_.front(); }
  virtual bool costOnly() const = 0;
  // Local replicas (a cost-only program's one executable stands for them all).
  int64_t replicas() const { return layout_.replicas(); }
  // The executables that run: one per local replica, or the cost-only one.
  const std::vector<std::shared_ptr<runtime::Executable>>& executables() const { return replicas_; }
  const CallLayout& layout() const { return layout_; }

  // Host types of a call's inputs and outputs: every local replica's share.
  std::vector<ir::TensorType> inputTypes() const;
  std::vector<ir::TensorType> outputTypes() const;
  // Runs one call. A cost-only program reads only the inputs' types and
  // writes no output (their data may be null).
  virtual void run(const std::vector<runtime::TensorView>& inputs,
                   const std::vector<runtime::TensorView>& outputs) = 0;

  // Replicated tensor sharding: each replica holds a shard of these
  // variables, by their whole shape; reads gather them, writes split them.
  void shardVariables(std::map<std::string, ir::Shape> wholeShapes);
  // Replica-grouped variables: the group of each of the job's replicas;
  // writes give each replica its group's row, reads join one row per group.
  void groupVariables(std::map<std::string, std::vector<int64_t>> jobGroups);
  bool sharded(const std::string& name) const { return sharded_.count(name) != 0; }
  // The host type a write or read of variable `name` takes.
  ir::TensorType variableType(const std::string& name) const;
  // Variable names (weights, states) of the program.
  std::vector<std::string> weightNames() const;
  std::vector<std::string> stateNames() const;

  virtual void writeVariables(const std::map<std::string, runtime::TensorView>& values) = 0;
  virtual void readVariables(const std::map<std::string, runtime::TensorView>& values) = 0;
  virtual void writeHyperparameters(size_t group, const std::map<std::string, double>& values) = 0;
  // Copies replica 0's variables `names` (of process 0, in a job of several)
  // to the other replicas.
  virtual void broadcast(const std::vector<std::string>& names) = 0;
  // Moves each replica's random counter to a range of its own (process
  // `process` of the job), so replicas draw other numbers; the host keeps
  // reading and writing replica 0's.
  virtual void drawApart(int64_t process) = 0;

protected:
  DeviceProgram(std::vector<std::shared_ptr<runtime::Executable>> replicas, CallLayout layout);
  std::vector<std::shared_ptr<runtime::Executable>> replicas_;
  CallLayout layout_;
  std::map<std::string, ir::Shape> sharded_;
  std::map<std::string, std::vector<int64_t>> grouped_;
};

// `executable`'s device program for a job of `replication`'s replicas, with
// calls laid out as `layout` says. A computing job of several replicas loads
// the program again per local replica and joins them in a ReplicaGroup whose
// sums cross processes with `crossProcessSum`; `crossProcess` carries the
// rest across them (both unused within one process).
std::unique_ptr<DeviceProgram>
makeDeviceProgram(std::shared_ptr<runtime::Executable> executable, const Replication& replication,
                  CallLayout layout, runtime::ReplicaGroup::CrossProcessSum crossProcessSum = {},
                  std::shared_ptr<CrossProcess> crossProcess = nullptr);

} // namespace popsim::host
