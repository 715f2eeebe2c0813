#pragma once

#include "api/session_profile.h"
#include "compiler/training/training_config.h"
#include "frontend/value_structure.h"
#include "host/anchors.h"
#include "host/device_program.h"
#include "popsim/options.h"
#include "popsim/session.h"
#include "runtime/executable.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/jit/api/module.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace popsim::api {

// A TorchScript module compiled for simulated IPUs, with its host module: what
// the public sessions share. Compiling follows the Python executor's steps
// over the same host runtime (csrc/host): import the module's forward() at
// one micro-batch's shapes (host::batchSplitOf), with blocks by module path,
// compile with the host's compile options, then copy the module's weights to
// the device.
class CompiledModule {
public:
  // `training`: the program runs forward, backward and the optimizer step
  // that `config` describes (its groups name the trained parameters).
  // `examples`: forward()'s inputs, tensors or tuples, lists and dicts of
  // them (api/nested_tensors.h).
  CompiledModule(torch::jit::Module module, const std::vector<c10::IValue>& examples,
                 Options options, bool training, const compiler::TrainingConfig& config = {});
  // Not copied or moved: its profile refers to its options.
  CompiledModule(const CompiledModule&) = delete;
  CompiledModule& operator=(const CompiledModule&) = delete;

  // One call; throws InputError with PopTorch's sentence for an input that
  // differs from the example inputs. Returns the model's tensors, flat.
  std::vector<at::Tensor> run(const std::vector<c10::IValue>& inputs);
  // A call's flat outputs nested as forward() returns them.
  c10::IValue nested(const std::vector<at::Tensor>& outputs) const;
  void copyWeightsToDevice();
  void copyWeightsToHost();
  std::vector<std::string> weightNames() const;

  // Replica 0's executable, which reports and profiles read; and the device
  // program that runs every replica.
  runtime::Executable& executable() { return program_->first(); }
  const runtime::Executable& executable() const { return program_->first(); }
  host::DeviceProgram& program() { return *program_; }
  torch::jit::Module& module() { return module_; }
  const Options& options() const { return options_; }
  double clockHz() const { return executable().options().system.spec().clockHz; }
  // Where the session writes its profile; empty when it writes none.
  std::string profileDirectory() const { return profile_.directory(); }
  // The sizing report of the last call; InputError before the first.
  SizingReport sizingReport() const;
  // An anchored tensor's value from the last call (Options::anchorTensor),
  // and the long names the session can anchor.
  at::Tensor anchoredTensor(const std::string& shortName) const;
  std::vector<std::string> tensorNames() const;
  // The samples a call takes in dimension 0 of its inputs (the example inputs').
  int64_t combinedBatchSize() const;

private:
  void checkInputs(const std::vector<at::Tensor>& inputs) const;
  // The module's buffers the program uses (replica 0's go to the others after
  // a training call, as Options.broadcastBuffers says).
  std::vector<std::string> bufferNames() const;

  torch::jit::Module module_;
  Options options_;
  SessionProfile profile_; // reads options_, so declared after it
  std::unique_ptr<host::DeviceProgram> program_;
  bool training_ = false;
  // What the program was compiled for: each input's name, and empty tensors
  // (on torch's meta device) of the example inputs' dtypes and shapes, for
  // PopTorch's mismatch messages.
  std::vector<std::string> inputNames_;
  // forward()'s parameters, how each input and the output nest their tensors.
  std::vector<std::string> parameterNames_;
  std::vector<frontend::ValueStructure> inputStructures_;
  frontend::ValueStructure outputStructure_;
  std::vector<at::Tensor> examples_;
  // Options::anchorTensor's plan (host/anchors.h), each anchored gradient's
  // parameter shape, the parameters the optimizer trains and the constant
  // loss scaling (for "finalLossScale" when the program holds none), and
  // the last call's anchored values.
  void takeAnchors(std::vector<at::Tensor>& outputs);
  host::AnchorPlan anchors_;
  std::map<std::string, std::vector<int64_t>> anchorShapes_;
  std::vector<std::string> trained_;
  double lossScaling_ = 1.0;
  std::map<std::string, at::Tensor> anchored_;
  profile::SizingJob sizingJob_; // what a call is, for sizing reports
  std::vector<profile::StageBlocks> stages_;
  bool called_ = false; // sizing reports need a call
};

// A TorchScript module loaded from `path` (written by torch.jit.save); throws
// InputError when it cannot be.
torch::jit::Module loadModule(const std::string& path);

} // namespace popsim::api
