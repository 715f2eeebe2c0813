#pragma once

// Running TorchScript models on simulated IPUs from C++: the counterparts of
// Python's popsim.inferenceModel and popsim.trainingModel.
//
//   torch::jit::Module module = torch::jit::load("model.pt");
//   popsim::Options opts;
//   opts.deviceIterations(8).setExecutionStrategy(
//       popsim::PipelinedExecution({{"layer1", 0}, {"layer2", 1}}));
//   popsim::InferenceSession session(module, {images}, opts);  // compiles
//   std::vector<at::Tensor> outputs = session.run({images});
//   c10::IValue result = session.forward(stack);  // nested as forward() returns it
//   std::cout << session.memoryReport() << session.simulatedTime() << " s simulated\n";
//
// Every error is a popsim::Error of the class its kind names
// (popsim/errors.h): OutOfMemoryError, InputError, OptionError, ...

#include "popsim/errors.h"
#include "popsim/execution_trace.h"
#include "popsim/inputs.h"
#include "popsim/memory_report.h"
#include "popsim/optim.h"
#include "popsim/options.h"
#include "popsim/sizing_report.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/data/example.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace popsim {

/// What both sessions offer once their module is compiled.
class Session {
public:
  virtual ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  /// Runs one call as run() does and returns the result as the module's
  /// forward() returns it, as torch::jit::Module::forward does: a tensor, or
  /// a tuple, list or dict (string keys) of tensors, each in the output
  /// mode's layout.
  c10::IValue forward(const Inputs& inputs);

  /// The memory plan of each simulated IPU.
  MemoryReport memoryReport() const;
  /// Simulated IPU cycles of the last call (0 before the first), and those
  /// cycles in seconds at the chip's clock. Simulated, not measured.
  uint64_t cycleCount() const;
  double simulatedTime() const;
  /// The last call as it ran on the simulated clock (Python's
  /// executionTrace()): every task run and transfer of each IPU, its
  /// statistics, and the text timeline `std::cout << trace` prints. No events
  /// before the first call.
  ExecutionTrace executionTrace() const;
  /// PopTorch's performance counters of the last call (Python's
  /// getPerfCounters()), and its latencies (getHostIpuLatency(), ...):
  /// executionTrace().perfCounters(inputs) for the session's inputs.
  PerfCounters perfCounters() const;

  /// The module's parameters and buffers, copied to the device (after the
  /// host's were changed), or the device's copied into them.
  void copyWeightsToDevice();
  void copyWeightsToHost();
  /// The weights the compiled program uses, by parameter path ("layer1.0.weight").
  std::vector<std::string> weightNames() const;

  const Options& options() const;
  torch::jit::Module& module();

  /// The compiled program as text (popsim's IR, each op with its block, IPU
  /// and source line): Python's model._debug_ir(optimized=True).
  std::string programText() const;
  /// The last call's sizing report (Python's sizingReport()): each IPU's
  /// memory by category against its capacity, the simulated step time and
  /// throughput, where each IPU's time goes, and advice. With
  /// Options::Simulator.costOnly() it sizes a job without computing it.
  /// Throws InputError before the first call.
  SizingReport sizingReport() const;
  /// The directory this session writes its profile into (trace.json,
  /// memory.json, report.html; see Options::enableProfiling); empty when it
  /// writes none.
  std::string profileDirectory() const;
  /// A tensor Options::anchorTensor anchored, as the last call left it
  /// (Python's getAnchoredTensor): an anchored gradient in the model's output
  /// mode (several micro-batches' stacked along a new dimension 0), a
  /// variable's value after the call. Throws OptionError for a short name
  /// the options do not anchor, or before the first call.
  at::Tensor getAnchoredTensor(const std::string& shortName) const;
  /// The long names Options::anchorTensor accepts for this session (Python's
  /// getTensorNames()).
  std::vector<std::string> getTensorNames() const;
  /// The samples a call takes in dimension 0 of its inputs, as the example
  /// inputs had: micro-batch x deviceIterations (x gradientAccumulation in
  /// training), Python's DataLoader.combinedBatchSize. A torch::data loader
  /// of this batch size (with drop_last) feeds run() one call per batch.
  /// Throws InputError when no input has a dimension 0.
  int64_t combinedBatchSize() const;

protected:
  Session();
  struct State; ///< the compiled module (and a training session's optimizer)
  /// The state, or an InputError for a session moved from (std::move), whose
  /// state went to the session it was moved into.
  State& state() const;
  std::unique_ptr<State> state_;
};

/// A TorchScript module compiled for inference on simulated IPUs. Each of its
/// modules runs as its train/eval flag says when the session is built, as its
/// forward() would in LibTorch: call module.eval() first for dropout off and
/// batch norm with running statistics. Its weights are copied to the device
/// when the session is built, and again by copyWeightsToDevice().
class InferenceSession : public Session {
public:
  /// Compiles `module` for calls whose inputs are shaped as `exampleInputs`:
  /// tensors whose dimension 0 holds deviceIterations micro-batches.
  InferenceSession(torch::jit::Module module, const Inputs& exampleInputs,
                   Options options = Options());
  /// The same for a module torch.jit.save wrote to `path` (a CompilationError
  /// quoting LibTorch when it cannot be read).
  InferenceSession(const std::string& path, const Inputs& exampleInputs,
                   Options options = Options());

  /// Runs one call: deviceIterations micro-batches of each input, stacked
  /// along dimension 0, as the example inputs were. Returns the model's
  /// outputs (its tensors, flattened from tuples, lists and dicts) in the
  /// output mode's layout; forward() returns them nested. Throws InputError
  /// for an input that differs, with PopTorch's sentence: "Shape mismatch for
  /// x: expected ...".
  std::vector<at::Tensor> run(const Inputs& inputs);
  /// Runs one call on a torch::data batch's data (stacked, as
  /// torch::data::transforms::Stack makes it; its target is not an input).
  /// (A template, so that run({a, b}) still means the vector of tensors.)
  template <typename Data, typename Target>
  std::vector<at::Tensor> run(const torch::data::Example<Data, Target>& batch) {
    return run(std::vector<at::Tensor>{batch.data});
  }
};

/// A TorchScript module trained on simulated IPUs: each call runs
/// deviceIterations optimizer steps, each over gradientAccumulation
/// micro-batches, forward, backward and update all on the device. The module's
/// forward() returns its loss, or (output, loss), computed with a loss function
/// (or popsim's identity_loss); it runs as its modules' train/eval flags say
/// (torch::jit::load keeps the flags a module was saved with). While the
/// session trains, the device holds the weights that count:
/// copyWeightsToHost() copies them into the module.
class TrainingSession : public Session {
public:
  /// Compiles `module` for calls whose inputs are shaped as `exampleInputs`:
  /// tensors whose dimension 0 holds deviceIterations x gradientAccumulation
  /// micro-batches. The optimizer trains every parameter that requires a
  /// gradient (default: SGD with lr 0.01, as Python's default).
  TrainingSession(torch::jit::Module module, const Inputs& exampleInputs,
                  Options options = Options(), Optimizer optimizer = optim::SGD(0.01));
  TrainingSession(const std::string& path, const Inputs& exampleInputs, Options options = Options(),
                  Optimizer optimizer = optim::SGD(0.01));
  /// The same with a LibTorch optimizer (torch::optim::SGD, Adam, AdamW or
  /// RMSprop) over the module's parameters, with its options' names and
  /// values (see optimizerOf); each of its parameter groups trains with its
  /// own options (lr, weight_decay, momentum on or off, ...), as
  /// torch::optim's step() would. Throws OptionError when its parameters are
  /// not exactly the module's parameters that require a gradient, which the
  /// session trains.
  TrainingSession(torch::jit::Module module, const Inputs& exampleInputs, Options options,
                  const torch::optim::Optimizer& optimizer);

  /// Runs one call (deviceIterations optimizer steps) and returns the model's
  /// outputs in the output mode's layout (by default the last micro-batch's),
  /// flattened; forward() returns them nested.
  std::vector<at::Tensor> run(const Inputs& inputs);
  /// Runs one call on a torch::data batch (stacked, as
  /// torch::data::transforms::Stack makes it): its data and target are the
  /// module's two inputs. (A template, so that run({a, b}) still means the
  /// vector of tensors.)
  template <typename Data, typename Target>
  std::vector<at::Tensor> run(const torch::data::Example<Data, Target>& batch) {
    return run(std::vector<at::Tensor>{batch.data, batch.target});
  }
  /// New numeric hyper-parameters (a learning rate schedule, say) for the next
  /// calls, without recompiling; every parameter group takes them. Throws
  /// OptionError for another kind of optimizer or other state settings
  /// (momentum on or off, nesterov, amsgrad), another maxGradNorm or
  /// lossScaling, which are compiled in.
  void setOptimizer(const Optimizer& optimizer);
  /// The same from a LibTorch optimizer's current options, group by group, as
  /// a torch::optim scheduler (StepLR, say) leaves them after step(). Its
  /// groups must hold the parameters the session's groups hold.
  void setOptimizer(const torch::optim::Optimizer& optimizer);
};

/// The popsim optimizer a LibTorch optimizer describes: torch::optim::SGD,
/// Adam, AdamW or RMSprop with its parameter groups' options (lr, momentum,
/// dampening, weight_decay, nesterov, betas, eps, amsgrad, alpha, centered).
/// Throws OptionError for another optimizer, or for groups whose options
/// differ: one popsim optimizer has one set of options (a TrainingSession
/// takes the torch::optim optimizer itself, groups and all).
Optimizer optimizerOf(const torch::optim::Optimizer& optimizer);

/// Sizes a job without computing it (Python's popsim.sizeJob): compiles
/// `module` cost-only with `options` (Simulator.costOnly and
/// allowOverCapacity), makes one call and returns its sizing report. The call
/// stands for deviceIterations x replicationFactor (x gradientAccumulation for
/// training) micro-batches without allocating them (stride-0 views), so a
/// POD's global batch costs nothing on the host; a job that does not fit is
/// reported (fits() false, with advice) instead of throwing. `microBatch` is
/// one micro-batch of one replica's inputs, each with its batch dimension
/// first (only shapes and dtypes are read). With an optimizer, a training job.
SizingReport sizeJob(torch::jit::Module module, const std::vector<at::Tensor>& microBatch,
                     Options options = Options());
SizingReport sizeJob(torch::jit::Module module, const std::vector<at::Tensor>& microBatch,
                     Options options, Optimizer optimizer);

} // namespace popsim
