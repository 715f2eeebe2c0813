// The settings header of IR text (compiler/program_text.h): every setting
// prints and reads back, defaults print nothing, bad headers are named.

#include "compiler/program_text.h"

#include "common/error.h"

#include <gtest/gtest.h>

#include <string>

namespace popsim::compiler {
namespace {

// Every setting away from its default.
CompileSettings everySetting() {
  CompileSettings settings;
  CompilerOptions& options = settings.options;
  options.program = ProgramKind::Training;
  options.schedule = ScheduleKind::Grouped;
  options.recomputation = true;
  options.deviceIterations = 3;
  options.gradientAccumulation = 4;
  options.output = {OutputMode::EveryN, 3};
  options.stages = {{"enc", 0, 0}, {"dec", 1, 1}};
  TrainingConfig& training = options.training;
  training.optimizer = OptimizerKind::Lamb;
  ParameterGroup first;
  first.parameters = {"enc.weight", "enc.bias"};
  first.hasMomentum = first.nesterov = first.amsgrad = first.centered = first.maximize = true;
  first.biasCorrection = false;
  first.tfVariant = true;
  ParameterGroup second;
  second.parameters = {"dec.weight"};
  training.groups = {first, second};
  training.maxGradNorm = 0.1;
  training.gradientScale = 1.0 / 3.0;
  training.runningMean = true;
  training.halfAccumulators = true;
  training.halfStates = {"exp_avg"};
  training.anchoredGradients = {"dec.weight"};
  training.replicas = 4;
  training.systemIpus = 8;
  training.shardedParameters = {"enc.weight"};
  training.shardedWeights = {"enc.weight"};
  training.groupedParameters = {{"dec.weight", {2, 1}}};
  training.lossScaling = 128;
  training.lossScalingState = true;
  training.automaticLossScaling = true;
  training.lossScalingBinEdge = 0.25;
  training.lossScalingThreshold = 1e-6;
  settings.system.chip = device::ChipVersion::Bow;
  settings.system.numIpus = 2;
  settings.system.memoryPerIpu = 512 << 20;
  settings.system.ioTiles = 32;
  settings.system.replicasPerHostThread = 2;
  settings.disabledPasses = {"simplify-layout"};
  return settings;
}

const char* kGraph = "graph(%x: f32[4]) {\n  %0: f32[4] = relu(%x)\n  return (%0)\n}\n";

TEST(ProgramTextTest, EverySettingReadsBack) {
  const std::string header = printSettingsHeader(everySetting());
  EXPECT_EQ(header, "options {\n"
                    "  program = training\n"
                    "  schedule = grouped\n"
                    "  recomputation = true\n"
                    "  device_iterations = 3\n"
                    "  gradient_accumulation = 4\n"
                    "  output_mode = every_n\n"
                    "  output_period = 3\n"
                    "  stage = {block=\"enc\", stage=0, ipu=0}\n"
                    "  stage = {block=\"dec\", stage=1, ipu=1}\n"
                    "  optimizer = lamb\n"
                    "  group = {parameters=[\"enc.weight\", \"enc.bias\"], momentum=true, "
                    "nesterov=true, amsgrad=true, centered=true, maximize=true, "
                    "bias_correction=false, tf_variant=true}\n"
                    "  group = {parameters=[\"dec.weight\"]}\n"
                    "  max_grad_norm = 0.1\n"
                    "  gradient_scale = 0.3333333333333333\n"
                    "  running_mean = true\n"
                    "  half_accumulators = true\n"
                    "  half_states = [\"exp_avg\"]\n"
                    "  anchored_gradients = [\"dec.weight\"]\n"
                    "  replicas = 4\n"
                    "  system_ipus = 8\n"
                    "  sharded_parameters = [\"enc.weight\"]\n"
                    "  sharded_weights = [\"enc.weight\"]\n"
                    "  replica_group = {parameter=\"dec.weight\", size=2, stride=1}\n"
                    "  loss_scaling = 128\n"
                    "  loss_scaling_state = true\n"
                    "  automatic_loss_scaling = true\n"
                    "  loss_scaling_bin_edge = 0.25\n"
                    "  loss_scaling_threshold = 1e-06\n"
                    "  ipu_version = Bow\n"
                    "  ipus = 2\n"
                    "  memory_per_ipu = 536870912\n"
                    "  io_tiles = 32\n"
                    "  replicas_per_host_thread = 2\n"
                    "  disabled_passes = [\"simplify-layout\"]\n"
                    "}\n");
  const ProgramText program = parseProgramText(header + kGraph);
  EXPECT_EQ(printSettingsHeader(program.settings), header);
  EXPECT_EQ(program.settings.options.training.gradientScale, 1.0 / 3.0); // exactly
  ASSERT_NE(program.graph, nullptr);
  EXPECT_EQ(program.graph->nodes().size(), 1u);
}

TEST(ProgramTextTest, DefaultsHaveNoHeader) {
  EXPECT_EQ(printSettingsHeader(CompileSettings()), "");
  const ProgramText program = parseProgramText(kGraph);
  EXPECT_EQ(printSettingsHeader(program.settings), "");
}

TEST(ProgramTextTest, ASettingChangesOneField) {
  CompileSettings settings;
  applySetting(settings, "replicas = 2", "--set");
  applySetting(settings, "stage = {block=\"A\", stage=0, ipu=1}", "--set");
  EXPECT_EQ(settings.options.training.replicas, 2);
  ASSERT_EQ(settings.options.stages.size(), 1u);
  EXPECT_EQ(settings.options.stages[0].ipu, 1);
}

std::string errorOf(const std::string& text) {
  try {
    parseProgramText(text);
  } catch (const CoreError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ProgramTextTest, BadHeadersAreNamed) {
  EXPECT_NE(errorOf(std::string("options {\n  replicas = two\n}\n") + kGraph)
                .find("IR text, line 2, column 14: 'two' is not an integer"),
            std::string::npos);
  EXPECT_NE(errorOf(std::string("options {\n  replicas = 2\n  replicas = 4\n}\n") + kGraph)
                .find("IR text, line 3, column 3: 'replicas' is set twice"),
            std::string::npos);
  EXPECT_NE(errorOf(std::string("options {\n  group = {params=[\"w\"]}\n}\n") + kGraph)
                .find("a group has no field 'params' (its fields: parameters, momentum"),
            std::string::npos);
  EXPECT_NE(errorOf("options {\n  replicas = 2\n" + std::string(kGraph))
                .find("IR text, line 1: the options header is not closed"),
            std::string::npos);
  // The graph's own errors keep the file's line numbers.
  EXPECT_NE(errorOf("options {\n  replicas = 2\n}\ngraph(%x: f32[4]) {\n  %0: f32[4] = "
                    "relu(%y)\n}\n")
                .find("IR text, line 5, column 21: '%y' is not defined above"),
            std::string::npos);
  EXPECT_NE(errorOf(std::string("options {\n  ipus = 0\n}\n") + kGraph)
                .find("IR text, line 1: the options header's system settings do not hold: the "
                      "number of IPUs must be between 1 and 64, got 0."),
            std::string::npos);
  EXPECT_NE(errorOf(std::string("options {\n  io_tiles = 5\n}\n") + kGraph)
                .find("io_tiles must be 0 or an even number from 32 to 192, got 5"),
            std::string::npos);
}

} // namespace
} // namespace popsim::compiler
