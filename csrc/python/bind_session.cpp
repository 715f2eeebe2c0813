// The host runtime's session options and host steps (csrc/host), bound as
// they are in C++: popsim.Options' setters write these fields, and the
// executor asks the host to build the compile options, split batches and
// read the replication.

#include "host/anchors.h"
#include "host/batch_split.h"
#include "host/compile_options_builder.h"
#include "host/replication.h"
#include "host/session_options.h"
#include "host/session_options_json.h"
#include "host/tensor_sharding.h"
#include "python/bindings.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace popsim::python {
namespace {

// Copies (copy.copy, copy.deepcopy) and pickles of a plain struct.
template <typename Struct, typename Class> void copyable(Class& cls) {
  cls.def("__copy__", [](const Struct& value) { return Struct(value); })
      .def(
          "__deepcopy__", [](const Struct& value, const py::dict&) { return Struct(value); },
          py::arg("memo"));
}

void bindEnums(py::module_& module) {
  py::enum_<host::OutputMode>(module, "SessionOutputMode")
      .value("Final", host::OutputMode::Final)
      .value("EveryN", host::OutputMode::EveryN)
      .value("All", host::OutputMode::All)
      .value("Sum", host::OutputMode::Sum)
      .value("Default", host::OutputMode::Default);
  py::enum_<host::ReductionType>(module, "ReductionType")
      .value("Sum", host::ReductionType::Sum)
      .value("Mean", host::ReductionType::Mean)
      .value("NoReduction", host::ReductionType::NoReduction);
  py::enum_<host::MeanReductionStrategy>(module, "MeanReductionStrategy")
      .value("Running", host::MeanReductionStrategy::Running)
      .value("Post", host::MeanReductionStrategy::Post)
      .value("PostAndLoss", host::MeanReductionStrategy::PostAndLoss);
  py::enum_<host::HalfFloatCasting>(module, "HalfFloatCasting")
      .value("FloatDowncastToHalf", host::HalfFloatCasting::FloatDowncastToHalf)
      .value("HalfUpcastToFloat", host::HalfFloatCasting::HalfUpcastToFloat)
      .value("Default", host::HalfFloatCasting::Default);
  py::enum_<host::ConnectionType>(module, "ConnectionType")
      .value("Always", host::ConnectionType::Always)
      .value("OnDemand", host::ConnectionType::OnDemand)
      .value("Never", host::ConnectionType::Never);
  py::enum_<host::SyncPattern>(module, "SyncPattern")
      .value("Full", host::SyncPattern::Full)
      .value("SinglePipeline", host::SyncPattern::SinglePipeline)
      .value("ReplicaAndLadder", host::SyncPattern::ReplicaAndLadder);
  py::enum_<host::CommGroupType>(module, "CommGroupType")
      .value("All", host::CommGroupType::All)
      .value("Consecutive", host::CommGroupType::Consecutive)
      .value("Orthogonal", host::CommGroupType::Orthogonal)
      .value("Ungrouped", host::CommGroupType::Ungrouped);
  py::enum_<host::StreamCallbackMode>(module, "StreamCallbackMode")
      .value("SingleThread", host::StreamCallbackMode::SingleThread)
      .value("Collaborative", host::StreamCallbackMode::Collaborative)
      .value("Dedicated", host::StreamCallbackMode::Dedicated);
  py::enum_<host::StrategyKind>(module, "StrategyKind")
      .value("Pipelined", host::StrategyKind::Pipelined)
      .value("Sharded", host::StrategyKind::Sharded)
      .value("SerialPhased", host::StrategyKind::SerialPhased)
      .value("ParallelPhased", host::StrategyKind::ParallelPhased);
  py::enum_<host::AutoStage>(module, "AutoStage")
      .value("SameAsIpu", host::AutoStage::SameAsIpu)
      .value("AutoIncrement", host::AutoStage::AutoIncrement);
  py::enum_<host::Liveness>(module, "Liveness")
      .value("AlwaysLive", host::Liveness::AlwaysLive)
      .value("OffChipAfterFwd", host::Liveness::OffChipAfterFwd)
      .value("OffChipAfterFwdNoOverlap", host::Liveness::OffChipAfterFwdNoOverlap)
      .value("OffChipAfterEachPhase", host::Liveness::OffChipAfterEachPhase);
  py::enum_<host::ExecutableCache::Source>(module, "ExecutableCacheSource")
      .value("Environment", host::ExecutableCache::Source::Environment)
      .value("Off", host::ExecutableCache::Source::Off)
      .value("Directory", host::ExecutableCache::Source::Directory);
}

void bindParts(py::module_& module) {
  py::class_<host::StrategyStage>(module, "StrategyStage")
      .def(py::init([](std::vector<std::string> blocks, std::optional<int64_t> ipu) {
             return host::StrategyStage{std::move(blocks), ipu};
           }),
           py::arg("blocks"), py::arg("ipu") = py::none())
      .def_readwrite("blocks", &host::StrategyStage::blocks)
      .def_readwrite("ipu", &host::StrategyStage::ipu);
  py::class_<host::ExecutionStrategy>(module, "ExecutionStrategy")
      .def(py::init<>())
      .def_readwrite("kind", &host::ExecutionStrategy::kind)
      .def_readwrite("schedule", &host::ExecutionStrategy::schedule)
      .def_readwrite("auto_stage", &host::ExecutionStrategy::autoStage)
      .def_readwrite("stages", &host::ExecutionStrategy::stages)
      .def_readwrite("phase_sizes", &host::ExecutionStrategy::phaseSizes)
      .def_readwrite("liveness", &host::ExecutionStrategy::liveness)
      .def_readwrite("separate_backward_phase", &host::ExecutionStrategy::separateBackwardPhase);
  py::class_<host::TensorLocationSettings>(module, "TensorLocationSettings")
      .def(py::init<>())
      .def_readwrite("on_chip", &host::TensorLocationSettings::onChip)
      .def_readwrite("min_elements_for_off_chip",
                     &host::TensorLocationSettings::minElementsForOffChip)
      .def_readwrite("replicated_tensor_sharding",
                     &host::TensorLocationSettings::replicatedTensorSharding)
      .def_readwrite("min_elements_for_sharding",
                     &host::TensorLocationSettings::minElementsForSharding)
      .def_readwrite("io_tiles_to_load", &host::TensorLocationSettings::ioTilesToLoad)
      .def_readwrite("io_tiles_to_store", &host::TensorLocationSettings::ioTilesToStore);
  py::class_<host::InputReplicaGrouping>(module, "InputReplicaGrouping")
      .def(py::init<>())
      .def_readwrite("size", &host::InputReplicaGrouping::size)
      .def_readwrite("type", &host::InputReplicaGrouping::type);
  py::class_<host::Anchor>(module, "Anchor")
      .def(py::init([](std::string shortName, std::string longName,
                       std::optional<host::OutputMode> mode, int64_t period) {
             return host::Anchor{std::move(shortName), std::move(longName), mode, period};
           }),
           py::arg("short_name"), py::arg("long_name"), py::arg("mode") = py::none(),
           py::arg("period") = 1)
      .def_readwrite("short_name", &host::Anchor::shortName)
      .def_readwrite("long_name", &host::Anchor::longName)
      .def_readwrite("mode", &host::Anchor::mode)
      .def_readwrite("period", &host::Anchor::period);
  py::class_<host::ExecutableCache>(module, "ExecutableCache")
      .def(py::init<>())
      .def_readwrite("source", &host::ExecutableCache::source)
      .def_readwrite("directory", &host::ExecutableCache::directory);
  py::class_<host::StreamCallbackThreads>(module, "StreamCallbackThreads")
      .def(py::init<>())
      .def_readwrite("mode", &host::StreamCallbackThreads::mode)
      .def_readwrite("workers", &host::StreamCallbackThreads::workers)
      .def_readwrite("auto_workers", &host::StreamCallbackThreads::autoWorkers);
}

void bindGroups(py::module_& module) {
  py::class_<host::TrainingOptions>(module, "TrainingOptions")
      .def(py::init<>())
      .def_readwrite("gradient_accumulation", &host::TrainingOptions::gradientAccumulation)
      .def_readwrite("reduction", &host::TrainingOptions::reduction)
      .def_readwrite("mean_strategy", &host::TrainingOptions::meanStrategy)
      .def_readwrite("recomputation", &host::TrainingOptions::recomputation)
      .def_readwrite("automatic_loss_scaling", &host::TrainingOptions::automaticLossScaling)
      .def_readwrite("loss_scaling_bin_edge", &host::TrainingOptions::lossScalingBinEdge)
      .def_readwrite("loss_scaling_threshold", &host::TrainingOptions::lossScalingThreshold)
      .def_readwrite("loss_scaling_update_period", &host::TrainingOptions::lossScalingUpdatePeriod);
  py::class_<host::PrecisionOptions>(module, "PrecisionOptions")
      .def(py::init<>())
      .def_readwrite("half_partials", &host::PrecisionOptions::halfPartials)
      .def_readwrite("running_statistics_always_float",
                     &host::PrecisionOptions::runningStatisticsAlwaysFloat)
      .def_readwrite("half_float_casting", &host::PrecisionOptions::halfFloatCasting)
      .def_readwrite("floating_point_exceptions", &host::PrecisionOptions::floatingPointExceptions)
      .def_readwrite("stochastic_rounding", &host::PrecisionOptions::stochasticRounding);
  py::class_<host::SimulatorOptions>(module, "SimulatorOptions")
      .def(py::init<>())
      .def_readwrite("num_ipus", &host::SimulatorOptions::numIpus)
      .def_readwrite("chip", &host::SimulatorOptions::chip)
      .def_readwrite("memory_per_ipu", &host::SimulatorOptions::memoryPerIpu)
      .def_readwrite("threads_per_ipu", &host::SimulatorOptions::threadsPerIpu)
      .def_readwrite("cost_only", &host::SimulatorOptions::costOnly)
      .def_readwrite("allow_over_capacity", &host::SimulatorOptions::allowOverCapacity);
  py::class_<host::TensorLocationOptions>(module, "TensorLocationOptions")
      .def(py::init<>())
      .def_readwrite("optimizer", &host::TensorLocationOptions::optimizer)
      .def_readwrite("weights", &host::TensorLocationOptions::weights)
      .def_readwrite("accumulators", &host::TensorLocationOptions::accumulators)
      .def_readwrite("activations", &host::TensorLocationOptions::activations)
      .def_readwrite("num_io_tiles", &host::TensorLocationOptions::numIoTiles);
  py::class_<host::DistributedOptions>(module, "DistributedOptions")
      .def(py::init<>())
      .def_readwrite("num_processes", &host::DistributedOptions::numProcesses)
      .def_readwrite("process_id", &host::DistributedOptions::processId);

  py::class_<host::SessionOptions> session(
      module, "SessionOptions",
      "The session's options as the host runtime reads them (popsim.Options writes them).");
  session.def(py::init<>())
      .def_readwrite("device_iterations", &host::SessionOptions::deviceIterations)
      .def_readwrite("replication_factor", &host::SessionOptions::replicationFactor)
      .def_readwrite("input_replica_grouping", &host::SessionOptions::inputReplicaGrouping)
      .def_readwrite("output_mode", &host::SessionOptions::outputMode)
      .def_readwrite("output_return_period", &host::SessionOptions::outputReturnPeriod)
      .def_readwrite("random_seed", &host::SessionOptions::randomSeed)
      .def_readwrite("prefetch_depth", &host::SessionOptions::prefetchDepth)
      .def_readwrite("available_memory_proportion",
                     &host::SessionOptions::availableMemoryProportion)
      .def_readwrite("execution_strategy", &host::SessionOptions::executionStrategy)
      .def_readwrite("auto_round_num_ipus", &host::SessionOptions::autoRoundNumIpus)
      .def_readwrite("synthetic_data", &host::SessionOptions::syntheticData)
      .def_readwrite("module_namescope", &host::SessionOptions::moduleNamescope)
      .def_readwrite("broadcast_buffers", &host::SessionOptions::broadcastBuffers)
      .def_readwrite("connection_type", &host::SessionOptions::connectionType)
      .def_readwrite("sync_pattern", &host::SessionOptions::syncPattern)
      .def_readwrite("updatable_named_buffers", &host::SessionOptions::updatableNamedBuffers)
      .def_readwrite("source_location_excludes", &host::SessionOptions::sourceLocationExcludes)
      .def_readwrite("executable_cache", &host::SessionOptions::executableCache)
      .def_readwrite("profile_directory", &host::SessionOptions::profileDirectory)
      .def_readwrite("model_name", &host::SessionOptions::modelName)
      .def_readwrite("log_directory", &host::SessionOptions::logDirectory)
      .def_readwrite("ipu_id", &host::SessionOptions::ipuId)
      .def_readwrite("anchors", &host::SessionOptions::anchors)
      .def_readwrite("relax_optimizer_attributes_checks",
                     &host::SessionOptions::relaxOptimizerAttributesChecks)
      .def_readwrite("use_ipu_model", &host::SessionOptions::useIpuModel)
      .def_readwrite("show_compilation_progress_bar",
                     &host::SessionOptions::showCompilationProgressBar)
      .def_readwrite("log_cycle_count", &host::SessionOptions::logCycleCount)
      .def_readwrite("trace_model", &host::SessionOptions::traceModel)
      .def_readwrite("stream_callbacks", &host::SessionOptions::streamCallbacks)
      .def_readwrite("training", &host::SessionOptions::training)
      .def_readwrite("precision", &host::SessionOptions::precision)
      .def_readwrite("simulator", &host::SessionOptions::simulator)
      .def_readwrite("tensor_locations", &host::SessionOptions::tensorLocations)
      .def_readwrite("distributed", &host::SessionOptions::distributed)
      .def("resolved_output_mode", &host::SessionOptions::resolvedOutputMode, py::arg("training"),
           "The output mode a call returns in (Default resolved).")
      .def("downcasts_mixed_floats", &host::SessionOptions::downcastsMixedFloats,
           "Whether ops mixing float16 and float32 operands compute in float16.")
      .def("to_json", &host::sessionOptionsToJson)
      .def_static("from_json", &host::sessionOptionsFromJson, py::arg("text"))
      .def(py::pickle(
          [](const host::SessionOptions& options) { return host::sessionOptionsToJson(options); },
          [](const std::string& text) { return host::sessionOptionsFromJson(text); }));
  copyable<host::SessionOptions>(session);
}

void bindSteps(py::module_& module) {
  py::class_<host::Replication>(module, "Replication",
                                "Where a job's replicas are (host/replication.h).")
      .def_readonly("local", &host::Replication::local)
      .def_readonly("processes", &host::Replication::processes)
      .def_readonly("first", &host::Replication::first)
      .def_readonly("input_parts", &host::Replication::inputParts)
      .def_readonly("input_part_of", &host::Replication::inputPartOf)
      .def_property_readonly("job", &host::Replication::job)
      .def_property_readonly("input_label", &host::Replication::inputLabel)
      .def("input_group_size", &host::Replication::inputGroupSize);
  module.def("replication_of", &host::replicationOf, py::arg("options"),
             py::arg("training") = true);
  module.def("ipus_per_replica", &host::ipusPerReplica, py::arg("options"), py::arg("ipus_used"));

  py::class_<host::BatchSplit>(module, "BatchSplit",
                               "How a call's inputs split into micro-batches.")
      .def_readonly("device_iterations", &host::BatchSplit::deviceIterations)
      .def_readonly("gradient_accumulation", &host::BatchSplit::gradientAccumulation)
      .def_readonly("replica_parts", &host::BatchSplit::replicaParts)
      .def_readonly("replica_label", &host::BatchSplit::replicaLabel)
      .def_property_readonly("factor", &host::BatchSplit::factor)
      .def("micro_batch_shape", &host::BatchSplit::microBatchShape, py::arg("name"),
           py::arg("shape"))
      .def("batch_text", &host::BatchSplit::batchText, py::arg("micro_batch"))
      .def("explanation", &host::BatchSplit::explanation);
  module.def("batch_split_of", &host::batchSplitOf, py::arg("options"));
  module.def("micro_batches_of_a_call", &host::microBatchesOfACall, py::arg("options"),
             py::arg("training"));
  module.def(
      "plan_anchors",
      [](const host::SessionOptions& options, bool training,
         const std::vector<std::string>& trained, const std::vector<std::string>& weights,
         const std::vector<std::string>& optimizerState) {
        const host::AnchorPlan plan =
            host::planAnchors(options, training, trained, weights, optimizerState);
        return py::make_tuple(plan.gradients, plan.variables, plan.optimizerState);
      },
      py::arg("options"), py::arg("training"), py::arg("trained"), py::arg("weights"),
      py::arg("optimizer_state"),
      "The options' anchors checked against the model: (gradients, variables, optimizer "
      "state), each a list of (short name, parameter, variable or PopTorch's state name).");
  module.attr("POPTORCH_PARAMETER_PREFIX") = host::kPopTorchParameterPrefix;
  module.def("check_anchored_variables_held", &host::checkAnchoredVariablesHeld,
             py::arg("variables"), py::arg("held"));
  module.def("refuse_missing_anchor", &host::refuseMissingAnchor, py::arg("options"),
             py::arg("short_name"));
  module.def("anchorable_names", &host::anchorableNames, py::arg("used"), py::arg("training"),
             py::arg("trained"), py::arg("optimizer_state"));
  module.def("closest_match", &host::closestMatch, py::arg("word"), py::arg("candidates"),
             "difflib.get_close_matches(word, candidates, n=1)'s match, or ''.");

  module.def(
      "build_compile_options",
      [](const host::SessionOptions& options, const ir::Graph& graph, bool training,
         const compiler::TrainingConfig& config, uint64_t randomSeed,
         const host::StreamCallbackThreads& environment, int64_t hostThreads) {
        host::CompileInputs inputs;
        inputs.blocks = graph.blocks();
        inputs.training = training;
        inputs.config = config;
        inputs.randomSeed = randomSeed;
        inputs.environmentStreamCallbacks = environment;
        inputs.hostThreads = hostThreads;
        return host::buildCompileOptions(options, inputs);
      },
      py::arg("options"), py::arg("graph"), py::arg("training"), py::arg("config"),
      py::arg("random_seed"), py::arg("environment_stream_callbacks"), py::arg("host_threads"),
      "The compile options of `graph` (csrc/host/compile_options_builder.h).");
  module.def(
      "apply_session_training",
      [](const host::SessionOptions& options, compiler::TrainingConfig config) {
        host::applySessionTraining(options, config);
        return config;
      },
      py::arg("options"), py::arg("config"),
      "`config` with the session's part of a training program's config.");
  // Replicated tensor sharding's choice (csrc/host/tensor_sharding.h); a
  // parameter is (name, floating point, shape).
  using Candidates = std::vector<std::tuple<std::string, bool, std::vector<int64_t>>>;
  const auto candidatesOf = [](const Candidates& parameters) {
    std::vector<host::ShardCandidate> candidates;
    for (const auto& [name, floatingPoint, shape] : parameters)
      candidates.push_back({name, floatingPoint, shape});
    return candidates;
  };
  module.def(
      "shard_parameters",
      [candidatesOf](const host::SessionOptions& options, bool training,
                     const Candidates& parameters, compiler::TrainingConfig config) {
        host::shardParameters(options, training, candidatesOf(parameters), config);
        return config;
      },
      py::arg("options"), py::arg("training"), py::arg("parameters"), py::arg("config"),
      "`config` with the parameters the session shards over its replicas.");
  module.def(
      "sharded_variables",
      [candidatesOf](const compiler::TrainingConfig& config, const Candidates& parameters) {
        return host::shardedVariables(config, candidatesOf(parameters));
      },
      py::arg("config"), py::arg("parameters"),
      "The program's sharded variables (weights and optimizer state) by whole shape.");
  module.def("gradient_scale", &host::gradientScale, py::arg("options"));
  module.def("running_mean", &host::runningMean, py::arg("options"));
}

} // namespace

void bindSession(py::module_& module) {
  bindEnums(module);
  bindParts(module);
  bindGroups(module);
  bindSteps(module);
}

} // namespace popsim::python
