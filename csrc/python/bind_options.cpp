// The typed contract between the Python API and the C++ core: the compile
// options, their enums and the state names, bound as they are in C++. Python
// validates what users give (popsim.Options and friends) and fills these;
// C++ keeps internal assertions only.

#include "compiler/training/training_program.h"
#include "device/ipu_system.h"
#include "ir/state_names.h"
#include "python/bindings.h"
#include "runtime/executable.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace popsim::python {

void bindOptions(py::module_& module) {
  py::enum_<runtime::ProgramKind>(module, "ProgramKind")
      .value("Inference", runtime::ProgramKind::Inference)
      .value("Training", runtime::ProgramKind::Training)
      .value("Gradients", runtime::ProgramKind::Gradients);
  py::enum_<runtime::ExecutionMode>(module, "ExecutionMode")
      .value("Pipelined", runtime::ExecutionMode::Pipelined)
      .value("Sharded", runtime::ExecutionMode::Sharded);
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
      .def_readwrite("bias_correction", &compiler::ParameterGroup::biasCorrection);
  py::class_<compiler::TrainingConfig>(module, "TrainingConfig")
      .def(py::init<>())
      .def_readwrite("optimizer", &compiler::TrainingConfig::optimizer)
      .def_readwrite("groups", &compiler::TrainingConfig::groups)
      .def_readwrite("max_grad_norm", &compiler::TrainingConfig::maxGradNorm)
      .def_readwrite("gradient_scale", &compiler::TrainingConfig::gradientScale)
      .def_readwrite("running_mean", &compiler::TrainingConfig::runningMean)
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
  py::class_<runtime::CompileOptions>(module, "CompileOptions")
      .def(py::init<>())
      .def_property(
          "chip", [](const runtime::CompileOptions& o) { return o.system.chip; },
          [](runtime::CompileOptions& o, device::ChipVersion chip) { o.system.chip = chip; })
      .def_property(
          "num_ipus", [](const runtime::CompileOptions& o) { return o.system.numIpus; },
          [](runtime::CompileOptions& o, int64_t count) { o.system.numIpus = count; })
      .def_property(
          "memory_per_ipu", [](const runtime::CompileOptions& o) { return o.system.memoryPerIpu; },
          [](runtime::CompileOptions& o, uint64_t bytes) { o.system.memoryPerIpu = bytes; })
      .def_property(
          "io_tiles", [](const runtime::CompileOptions& o) { return o.system.ioTiles; },
          [](runtime::CompileOptions& o, int64_t tiles) { o.system.ioTiles = tiles; })
      .def_readwrite("device_iterations", &runtime::CompileOptions::deviceIterations)
      .def_readwrite("gradient_accumulation", &runtime::CompileOptions::gradientAccumulation)
      .def_property(
          "output_mode", [](const runtime::CompileOptions& o) { return o.output.mode; },
          [](runtime::CompileOptions& o, compiler::OutputMode mode) { o.output.mode = mode; })
      .def_property(
          "output_return_period", [](const runtime::CompileOptions& o) { return o.output.period; },
          [](runtime::CompileOptions& o, int64_t period) { o.output.period = period; })
      .def_readwrite("program", &runtime::CompileOptions::program)
      .def_readwrite("training", &runtime::CompileOptions::training)
      .def_readwrite("stages", &runtime::CompileOptions::stages)
      .def_readwrite("execution_mode", &runtime::CompileOptions::mode)
      .def_readwrite("schedule", &runtime::CompileOptions::schedule)
      .def_readwrite("recomputation", &runtime::CompileOptions::recomputation)
      .def_readwrite("threads_per_ipu", &runtime::CompileOptions::threadsPerIpu)
      .def_readwrite("prefetch_depth", &runtime::CompileOptions::prefetchDepth)
      .def_readwrite("synthetic_data", &runtime::CompileOptions::syntheticData)
      .def_readwrite("stochastic_rounding", &runtime::CompileOptions::stochasticRounding)
      .def_readwrite("floating_point_exceptions", &runtime::CompileOptions::floatingPointExceptions)
      .def_readwrite("half_partials", &runtime::CompileOptions::halfPartials)
      .def_readwrite("stochastic_rounding_seed", &runtime::CompileOptions::stochasticRoundingSeed)
      .def_readwrite("optimizer_location", &runtime::CompileOptions::optimizerLocation)
      .def_readwrite("weight_location", &runtime::CompileOptions::weightLocation)
      .def_readwrite("accumulator_location", &runtime::CompileOptions::accumulatorLocation)
      .def_readwrite("activation_location", &runtime::CompileOptions::activationLocation)
      .def_readwrite("available_memory_proportion",
                     &runtime::CompileOptions::availableMemoryProportion);

  // The names the device keeps state under, for the host to read and write it.
  module.def("parameter_state_keys", &compiler::parameterStateKeys, py::arg("optimizer"),
             py::arg("group"), "PyTorch's per-parameter optimizer state keys of a group.");
  module.def("parameter_state_name", &ir::parameterStateName, py::arg("parameter"), py::arg("key"));
  module.def("group_state_name", &ir::groupStateName, py::arg("group"), py::arg("key"));
  module.def("hyperparameter_names", &compiler::hyperParameterNames, py::arg("optimizer"));
  module.attr("RANDOM_COUNTER_NAME") = ir::kRandomCounterName;
  module.attr("LOSS_SCALING_NAME") = ir::kLossScalingName;
}

} // namespace popsim::python
