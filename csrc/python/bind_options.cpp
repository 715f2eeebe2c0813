// The typed contract between the Python API and the C++ core: the compile
// options, their enums and the state names, bound as they are in C++. The
// host runtime builds the compile options from the session's options
// (bind_session.cpp); tests and tools fill them by hand.

#include "compiler/compiler_options.h"
#include "compiler/training/training_config.h"
#include "device/ipu_system.h"
#include "device/memory_size.h"
#include "ir/state_names.h"
#include "python/bindings.h"
#include "runtime/compile_options.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace popsim::python {

void bindOptions(py::module_& module) {
  py::enum_<compiler::ProgramKind>(module, "ProgramKind")
      .value("Inference", compiler::ProgramKind::Inference)
      .value("Training", compiler::ProgramKind::Training)
      .value("Gradients", compiler::ProgramKind::Gradients);
  py::enum_<compiler::ScheduleKind>(module, "ScheduleKind")
      .value("Interleaved", compiler::ScheduleKind::Interleaved)
      .value("Grouped", compiler::ScheduleKind::Grouped)
      .value("Sequential", compiler::ScheduleKind::Sequential);
  py::enum_<compiler::OutputMode>(module, "OutputMode")
      .value("All", compiler::OutputMode::All)
      .value("Final", compiler::OutputMode::Final)
      .value("EveryN", compiler::OutputMode::EveryN)
      .value("Sum", compiler::OutputMode::Sum);
  py::enum_<compiler::OptimizerKind>(module, "OptimizerKind")
      .value("Sgd", compiler::OptimizerKind::Sgd)
      .value("Adam", compiler::OptimizerKind::Adam)
      .value("AdamW", compiler::OptimizerKind::AdamW)
      .value("Rmsprop", compiler::OptimizerKind::Rmsprop)
      .value("Lamb", compiler::OptimizerKind::Lamb);
  py::enum_<device::ChipVersion>(module, "ChipVersion")
      .value("Mk1", device::ChipVersion::Mk1)
      .value("Mk2", device::ChipVersion::Mk2)
      .value("Bow", device::ChipVersion::Bow);

  py::class_<memory::TensorLocation>(module, "TensorLocation")
      .def(py::init<>())
      .def(py::init([](bool onChip, int64_t minElements, bool ioTilesToLoad, bool ioTilesToStore) {
             return memory::TensorLocation{onChip, minElements, ioTilesToLoad, ioTilesToStore};
           }),
           py::arg("on_chip"), py::arg("min_elements_for_off_chip") = 0,
           py::arg("io_tiles_to_load") = false, py::arg("io_tiles_to_store") = false)
      .def_readwrite("on_chip", &memory::TensorLocation::onChip)
      .def_readwrite("min_elements_for_off_chip", &memory::TensorLocation::minElementsForOffChip)
      .def_readwrite("io_tiles_to_load", &memory::TensorLocation::ioTilesToLoad)
      .def_readwrite("io_tiles_to_store", &memory::TensorLocation::ioTilesToStore);
  py::class_<compiler::StageAssignment>(module, "StageAssignment")
      .def(py::init([](std::string block, int64_t stage, int64_t ipu) {
             return compiler::StageAssignment{std::move(block), stage, ipu};
           }),
           py::arg("block"), py::arg("stage"), py::arg("ipu"))
      .def_readonly("block", &compiler::StageAssignment::block)
      .def_readonly("stage", &compiler::StageAssignment::stage)
      .def_readonly("ipu", &compiler::StageAssignment::ipu);
  py::class_<compiler::ParameterGroup>(module, "ParameterGroup")
      .def(py::init<>())
      .def_readwrite("parameters", &compiler::ParameterGroup::parameters)
      .def_readwrite("has_momentum", &compiler::ParameterGroup::hasMomentum)
      .def_readwrite("nesterov", &compiler::ParameterGroup::nesterov)
      .def_readwrite("amsgrad", &compiler::ParameterGroup::amsgrad)
      .def_readwrite("centered", &compiler::ParameterGroup::centered)
      .def_readwrite("maximize", &compiler::ParameterGroup::maximize)
      .def_readwrite("bias_correction", &compiler::ParameterGroup::biasCorrection)
      .def_readwrite("use_tf_variant", &compiler::ParameterGroup::tfVariant);
  py::class_<compiler::TrainingConfig>(module, "TrainingConfig")
      .def(py::init<>())
      .def_readwrite("optimizer", &compiler::TrainingConfig::optimizer)
      .def_readwrite("groups", &compiler::TrainingConfig::groups)
      .def_readwrite("max_grad_norm", &compiler::TrainingConfig::maxGradNorm)
      .def_readwrite("gradient_scale", &compiler::TrainingConfig::gradientScale)
      .def_readwrite("running_mean", &compiler::TrainingConfig::runningMean)
      .def_readwrite("half_accumulators", &compiler::TrainingConfig::halfAccumulators)
      .def_readwrite("half_states", &compiler::TrainingConfig::halfStates)
      .def_readwrite("anchored_gradients", &compiler::TrainingConfig::anchoredGradients)
      .def_readwrite("replicas", &compiler::TrainingConfig::replicas)
      .def_readwrite("system_ipus", &compiler::TrainingConfig::systemIpus)
      .def_readwrite("sharded_parameters", &compiler::TrainingConfig::shardedParameters)
      .def_readwrite("sharded_weights", &compiler::TrainingConfig::shardedWeights)
      .def_readwrite("grouped_parameters", &compiler::TrainingConfig::groupedParameters)
      .def_readwrite("loss_scaling", &compiler::TrainingConfig::lossScaling)
      .def_readwrite("loss_scaling_state", &compiler::TrainingConfig::lossScalingState)
      .def_readwrite("automatic_loss_scaling", &compiler::TrainingConfig::automaticLossScaling)
      .def_readwrite("loss_scaling_bin_edge", &compiler::TrainingConfig::lossScalingBinEdge)
      .def_readwrite("loss_scaling_threshold", &compiler::TrainingConfig::lossScalingThreshold);
  py::class_<device::IpuSystemConfig>(module, "IpuSystemConfig",
                                      "The simulated system: chip, IPUs, memory, IO tiles.")
      .def(py::init<>())
      .def_readwrite("chip", &device::IpuSystemConfig::chip)
      .def_readwrite("num_ipus", &device::IpuSystemConfig::numIpus)
      .def_readwrite("memory_per_ipu", &device::IpuSystemConfig::memoryPerIpu)
      .def_readwrite("io_tiles", &device::IpuSystemConfig::ioTiles)
      .def_readwrite("replicas_per_host_thread", &device::IpuSystemConfig::replicasPerHostThread)
      .def_property_readonly("clock_hz",
                             [](const device::IpuSystemConfig& s) { return s.spec().clockHz; });
  py::class_<compiler::CompilerOptions>(module, "CompilerOptions",
                                        "What the compiler builds: program, stages, schedule.")
      .def(py::init<>())
      .def_readwrite("program", &compiler::CompilerOptions::program)
      .def_readwrite("training", &compiler::CompilerOptions::training)
      .def_readwrite("stages", &compiler::CompilerOptions::stages)
      .def_readwrite("schedule", &compiler::CompilerOptions::schedule)
      .def_readwrite("recomputation", &compiler::CompilerOptions::recomputation)
      .def_readwrite("device_iterations", &compiler::CompilerOptions::deviceIterations)
      .def_readwrite("gradient_accumulation", &compiler::CompilerOptions::gradientAccumulation)
      .def_property(
          "output_mode", [](const compiler::CompilerOptions& o) { return o.output.mode; },
          [](compiler::CompilerOptions& o, compiler::OutputMode mode) { o.output.mode = mode; })
      .def_property(
          "output_return_period",
          [](const compiler::CompilerOptions& o) { return o.output.period; },
          [](compiler::CompilerOptions& o, int64_t period) { o.output.period = period; });
  py::class_<memory::MemoryOptions>(module, "MemoryOptions",
                                    "What the memory plan is asked for: tensor locations, "
                                    "availableMemoryProportion, prefetching, partials.")
      .def(py::init<>())
      .def_readwrite("weight_location", &memory::MemoryOptions::weights)
      .def_readwrite("optimizer_location", &memory::MemoryOptions::optimizerState)
      .def_readwrite("accumulator_location", &memory::MemoryOptions::accumulators)
      .def_readwrite("activation_location", &memory::MemoryOptions::activations)
      .def_readwrite("available_memory_proportion",
                     &memory::MemoryOptions::availableMemoryProportion)
      .def_readwrite("prefetch_depth", &memory::MemoryOptions::prefetchDepth)
      .def_readwrite("half_partials", &memory::MemoryOptions::halfPartials);
  py::class_<clock::ClockOptions>(module, "ClockOptions", "What the simulated clock is told.")
      .def(py::init<>())
      .def_readwrite("synthetic_data", &clock::ClockOptions::syntheticData)
      .def_readwrite("host_exchanges_stall_every_ipu",
                     &clock::ClockOptions::hostExchangesStallEveryIpu);
  py::class_<runtime::KernelOptions>(module, "KernelOptions",
                                     "How kernels are bound and run on the host.")
      .def(py::init<>())
      .def_readwrite("threads_per_ipu", &runtime::KernelOptions::threadsPerIpu)
      .def_readwrite("stochastic_rounding", &runtime::KernelOptions::stochasticRounding)
      .def_readwrite("stochastic_rounding_seed", &runtime::KernelOptions::stochasticRoundingSeed)
      .def_readwrite("floating_point_exceptions", &runtime::KernelOptions::floatingPointExceptions)
      .def_readwrite("cost_only", &runtime::KernelOptions::costOnly);
  py::class_<runtime::CompileOptions>(module, "CompileOptions",
                                      "Everything a model is compiled with, one part per stage.")
      .def(py::init<>())
      .def_readwrite("system", &runtime::CompileOptions::system)
      .def_readwrite("compiler", &runtime::CompileOptions::compiler)
      .def_readwrite("memory", &runtime::CompileOptions::memory)
      .def_readwrite("clock", &runtime::CompileOptions::clock)
      .def_readwrite("kernels", &runtime::CompileOptions::kernels)
      .def_readwrite("allow_over_capacity", &runtime::CompileOptions::allowOverCapacity);

  // The names the device keeps state under, for the host to read and write it.
  // The option values the C++ API parses too, parsed once, in the core.
  module.def("parse_memory_size", &device::parseMemorySize, py::arg("text"),
             "Bytes from a size such as '64MiB', '512 KB' or '1.5GiB'; None if it is none.");
  module.def(
      "parse_chip_version",
      [](const std::string& text) -> std::optional<std::string> {
        device::ChipVersion version;
        if (!device::parseChipVersion(text, &version)) return std::nullopt;
        return std::string(device::chipVersionName(version));
      },
      py::arg("text"),
      "'Mk1', 'Mk2' or 'Bow' for an IPU version's name (any case, or GC2, GC200).");
  module.def("parameter_state_keys", &compiler::parameterStateKeys, py::arg("optimizer"),
             py::arg("group"), "PyTorch's per-parameter optimizer state keys of a group.");
  py::enum_<compiler::StateTypeArgument>(module, "StateTypeArgument")
      .value("Velocity", compiler::StateTypeArgument::Velocity)
      .value("FirstOrderMomentum", compiler::StateTypeArgument::FirstOrderMomentum)
      .value("SecondOrderMomentum", compiler::StateTypeArgument::SecondOrderMomentum);
  module.def("state_keys_typed_by", &compiler::stateKeysTypedBy, py::arg("optimizer"),
             py::arg("argument"),
             "The optimizer state keys a PopTorch *_accum_type argument types.");
  module.def("initial_state_value", &compiler::initialStateValue, py::arg("group"), py::arg("key"),
             "What an optimizer state holds before the first step (without a state to resume).");
  module.def("parameter_state_name", &ir::parameterStateName, py::arg("parameter"), py::arg("key"));
  module.def("group_state_name", &ir::groupStateName, py::arg("group"), py::arg("key"));
  module.def("hyperparameter_names", &compiler::hyperParameterNames, py::arg("optimizer"));
  module.attr("RANDOM_COUNTER_NAME") = ir::kRandomCounterName;
  module.attr("LOSS_SCALING_NAME") = ir::kLossScalingName;
}

} // namespace popsim::python
