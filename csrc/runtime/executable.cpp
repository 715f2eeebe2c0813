#include "runtime/executable.h"

#include "common/check.h"
#include "common/logging.h"
#include "device/cost_model.h"
#include "ir/printer.h"
#include "kernels/kernel_factory.h"
#include "passes/pass_manager.h"
#include "passes/passes.h"

#include <cstring>

namespace popsim::runtime {
namespace {

const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

std::string displayName(const ir::Value& input, size_t index) {
  return input.name().empty() ? "input " + std::to_string(index) : "input '" + input.name() + "'";
}

template <typename T> void accumulate(void* destination, const void* source, int64_t count) {
  auto* out = static_cast<T*>(destination);
  const auto* in = static_cast<const T*>(source);
  for (int64_t i = 0; i < count; ++i) {
    out[i] += in[i];
  }
}

} // namespace

Executable::~Executable() = default;

std::unique_ptr<Executable> Executable::compile(const ir::Graph& graph,
                                                const CompileOptions& options) {
  options.system.validate();
  options.output.validate(options.deviceIterations * options.gradientAccumulation);
  std::unique_ptr<Executable> executable(new Executable());
  executable->options_ = options;
  POPSIM_CHECK(options.gradientAccumulation >= 1, ErrorKind::InvalidOption,
               "gradientAccumulation must be at least 1, got ", options.gradientAccumulation, ".");
  executable->graph_ = graph.clone();
  ir::Graph& program = *executable->graph_;
  if (options.program != ProgramKind::Inference) {
    POPSIM_CHECK(program.loss() != nullptr, ErrorKind::Compilation,
                 "the model has no loss to train or differentiate.");
    if (options.program == ProgramKind::Training) {
      passes::buildTrainingProgram(program, options.training);
    } else {
      passes::makeGradientProgram(program);
    }
  }

  passes::PassManager()
      .add(passes::createSimplifyLayoutPass())
      .add(passes::createDeadCodeEliminationPass())
      .run(program);
  for (const ir::Value* input : program.inputs()) {
    POPSIM_CHECK(input->type().rank() >= 1, ErrorKind::InvalidInput, "input '", input->name(),
                 "' is a scalar. popsim splits every input along dimension 0 into device "
                 "iterations, so inputs need a batch dimension.");
  }
  POPSIM_CHECK(!program.outputs().empty() || options.program == ProgramKind::Training,
               ErrorKind::Compilation,
               "the model returns no tensors, so there is nothing to compute.");

  POPSIM_LOG(Debug) << "program after passes:\n" << ir::printGraph(program);
  passes::MemoryPlanOptions planOptions;
  planOptions.numIpus = options.system.numIpus;
  executable->plan_ = passes::planMemory(program, planOptions);
  executable->memoryReport_ = device::buildMemoryReport(program, executable->plan_, options.system);
  device::checkMemoryFits(executable->memoryReport_, options.system);

  executable->memory_ = std::make_unique<DeviceMemory>(executable->plan_);
  const DeviceMemory& memory = *executable->memory_;
  for (const ir::Value* constant : program.constants()) {
    if (constant->type().bytes() != 0) {
      std::memcpy(memory.address(constant), constant->constantData().data(),
                  constant->type().bytes());
    }
  }

  const device::ChipSpec& chip = options.system.spec();
  for (const auto& node : program.nodes()) {
    kernels::KernelRequest request{*node,
                                   {},
                                   {},
                                   cpuEngine(),
                                   &executable->weightsVersion_,
                                   options.program != ProgramKind::Inference};
    for (const ir::Value* input : node->inputs()) {
      request.inputs.push_back({memory.address(input), input->type()});
    }
    for (const ir::Value* output : node->outputs()) {
      request.outputs.push_back({memory.address(output), output->type()});
    }
    auto kernel = kernels::createKernel(request);
    const uint64_t cycles = device::estimateOpCost(*node, chip).total();
    executable->program_.push_back({std::string(node->name()), node->location().str(),
                                    kernel ? kernel->implementation() : "view",
                                    node->placement().ipu, cycles});
    const bool update = node->placement().phase == ir::Phase::Update;
    (update ? executable->updateCycles_ : executable->microBatchCycles_) += cycles;
    if (kernel) {
      (update ? executable->updateSegment_ : executable->microBatchSegment_)
          .push_back(kernel.get());
    }
    executable->kernels_.push_back(std::move(kernel));
  }
  executable->computeCyclesPerIteration_ =
      executable->microBatchCycles_ * static_cast<uint64_t>(options.gradientAccumulation) +
      executable->updateCycles_;
  executable->stream_ = dnnl::stream(cpuEngine());
  POPSIM_LOG(Info) << "compiled " << program.nodes().size() << " ops for "
                   << options.deviceIterations << " device iteration(s)";
  return executable;
}

std::vector<ir::TensorType> Executable::inputHostTypes() const {
  std::vector<ir::TensorType> types;
  for (const ir::Value* input : graph_->inputs()) {
    ir::TensorType type = input->type();
    type.shape[0] *= options_.deviceIterations * options_.gradientAccumulation;
    types.push_back(type);
  }
  return types;
}

std::vector<ir::TensorType> Executable::outputHostTypes() const {
  std::vector<ir::TensorType> types;
  for (const ir::Value* output : graph_->outputs()) {
    types.push_back(
        {output->type().dtype,
         options_.output.hostShape(output->type().shape,
                                   options_.deviceIterations * options_.gradientAccumulation)});
  }
  return types;
}

void Executable::copyOutput(size_t index, const TensorView& destination, int64_t slot,
                            bool accumulateInto) const {
  const ir::Value* output = graph_->outputs()[index];
  const size_t bytes = output->type().bytes();
  if (bytes == 0) {
    return;
  }
  const void* source = memory_->address(output);
  void* target = static_cast<uint8_t*>(destination.data) + static_cast<size_t>(slot) * bytes;
  if (!accumulateInto) {
    std::memcpy(target, source, bytes);
    return;
  }
  const int64_t count = output->type().numel();
  switch (output->type().dtype) {
  case ir::DType::Float32: accumulate<float>(target, source, count); break;
  case ir::DType::Int32: accumulate<int32_t>(target, source, count); break;
  case ir::DType::Int64: accumulate<int64_t>(target, source, count); break;
  case ir::DType::Bool: accumulate<uint8_t>(target, source, count); break;
  case ir::DType::Float64: accumulate<double>(target, source, count); break;
  }
}

void Executable::run(const std::vector<TensorView>& inputs,
                     const std::vector<TensorView>& outputs) {
  const auto& graphInputs = graph_->inputs();
  const auto& graphOutputs = graph_->outputs();
  POPSIM_CHECK(inputs.size() == graphInputs.size(), ErrorKind::InvalidInput, "the model takes ",
               graphInputs.size(), " tensor input(s) but was given ", inputs.size(), ".");
  const std::vector<ir::TensorType> inputTypes = inputHostTypes();
  for (size_t i = 0; i < inputs.size(); ++i) {
    POPSIM_CHECK(inputs[i].type() == inputTypes[i], ErrorKind::InvalidInput,
                 displayName(*graphInputs[i], i), " has type ", inputs[i].type().str(),
                 " but the model was compiled for ", inputTypes[i].str(), ".");
  }
  const std::vector<ir::TensorType> outputTypes = outputHostTypes();
  POPSIM_ASSERT(outputs.size() == outputTypes.size(), "expected ", outputTypes.size(),
                " output buffers, got ", outputs.size(), ".");
  for (size_t i = 0; i < outputs.size(); ++i) {
    POPSIM_ASSERT(outputs[i].type() == outputTypes[i], "output ", i, " buffer is ",
                  outputs[i].type().str(), ", expected ", outputTypes[i].str(), ".");
  }

  const int64_t microBatches = options_.deviceIterations * options_.gradientAccumulation;
  const device::ChipSpec& chip = options_.system.spec();
  uint64_t cycles = 0;
  for (int64_t microBatch = 0; microBatch < microBatches; ++microBatch) {
    // Host -> device: this micro-batch of every input.
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t bytes = graphInputs[i]->type().bytes();
      if (bytes != 0) {
        std::memcpy(memory_->address(graphInputs[i]),
                    static_cast<const uint8_t*>(inputs[i].data) +
                        static_cast<size_t>(microBatch) * bytes,
                    bytes);
      }
      cycles += device::hostTransferCycles(bytes, chip);
    }
    runSegment(microBatchSegment_);
    cycles += microBatchCycles_;
    // Device -> host: the outputs this micro-batch returns under the output mode.
    const int64_t slot = options_.output.slotOf(microBatch, microBatches);
    if (slot >= 0) {
      const bool accumulateInto = options_.output.mode == OutputMode::Sum && microBatch > 0;
      for (size_t i = 0; i < graphOutputs.size(); ++i) {
        copyOutput(i, outputs[i], slot, accumulateInto);
        if (!accumulateInto) {
          cycles += device::hostTransferCycles(graphOutputs[i]->type().bytes(), chip);
        }
      }
    }
    // After the last micro-batch of a step, the optimizer step.
    if ((microBatch + 1) % options_.gradientAccumulation == 0 && !updateSegment_.empty()) {
      runSegment(updateSegment_);
      ++weightsVersion_;
      cycles += updateCycles_;
    }
  }
  stream_.wait();
  lastRunCycles_ = cycles;
}

void Executable::runSegment(const std::vector<kernels::Kernel*>& segment) {
  for (kernels::Kernel* kernel : segment) {
    kernel->run(stream_);
  }
}

const ir::Value& Executable::variableNamed(const std::string& name) const {
  const ir::Value* variable = graph_->findWeight(name);
  if (variable == nullptr) {
    variable = graph_->findState(name);
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
  if (source.bytes() != 0) {
    std::memcpy(memory_->address(&variable), source.data, source.bytes());
  }
  ++weightsVersion_;
}

void Executable::readVariable(const std::string& name, const TensorView& destination) const {
  const ir::Value& variable = variableNamed(name);
  POPSIM_CHECK(destination.type() == variable.type(), ErrorKind::InvalidInput,
               describeVariable(variable), " is ", variable.type().str(),
               " but the host tensor is ", destination.type().str(), ".");
  if (destination.bytes() != 0) {
    std::memcpy(destination.data, memory_->address(&variable), destination.bytes());
  }
}

} // namespace popsim::runtime
