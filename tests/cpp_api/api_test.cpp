// popsim's public C++ API, through its installed headers only. The fixtures
// (the tutorial network as TorchScript, and Python's results for the same
// model and options) come from make_reference.py, in the directory
// POPSIM_API_FIXTURES names.
#include <popsim/popsim.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/data.h>
#include <torch/optim.h>
#include <torch/script.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace {

const std::string& fixtures() {
  static const std::string directory = [] {
    const char* value = std::getenv("POPSIM_API_FIXTURES");
    return std::string(value == nullptr ? "." : value);
  }();
  return directory;
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using Json = nlohmann::ordered_json;

torch::jit::Module load(const std::string& name) {
  return torch::jit::load(fixtures() + "/" + name);
}

at::Tensor reference(const std::string& name) {
  static torch::jit::Module tensors = load("reference.pt");
  return tensors.attr(name).toTensor();
}

const std::vector<std::pair<std::string, int64_t>> kFourIpus = {
    {"layer1", 0}, {"layer2", 1}, {"layer3", 2}, {"layer4", 3}};

popsim::Options pipelined() {
  popsim::Options options;
  options.deviceIterations(8).setExecutionStrategy(popsim::PipelinedExecution(kFourIpus));
  return options;
}

at::Tensor eagerForward(torch::jit::Module& module, const at::Tensor& images) {
  torch::NoGradGuard noGrad;
  return module.forward({images}).toTensor();
}

// popsim's messages to C++ programs spell its API as C++ does; Python's names
// appear only as Python's (the model's own code is Python: torch.where stays).
void expectCppSpelling(const std::string& message) {
  for (const char* python :
       {"torch.Size(", "(True)", "(False)", "popsim.ShardedExecution", "popsim.PipelinedExecution",
        "poptorch.", "popsim.Block and", "popsim.TensorLocationSettings", "torch.float"})
    EXPECT_EQ(message.find(python), std::string::npos) << python << " in: " << message;
}

template <typename ErrorClass, typename Body> std::string messageOf(Body&& body) {
  try {
    body();
  } catch (const ErrorClass& error) {
    expectCppSpelling(error.what());
    return error.what();
  }
  ADD_FAILURE() << "no error of the expected class was thrown";
  return "";
}

TEST(PublicApi, PipelinedInferenceMatchesLibTorchAndPython) {
  torch::jit::Module module = load("mnist_traced.pt");
  const at::Tensor images = reference("images");
  popsim::InferenceSession session(module, {images}, pipelined());
  const std::vector<at::Tensor> outputs = session.run({images});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TRUE(torch::allclose(outputs[0], eagerForward(module, images), 1e-5, 1e-5));
  // The same model and options in Python: the same program, so the same bits,
  // cycles and memory.
  EXPECT_TRUE(torch::equal(outputs[0], reference("pipelined_outputs")));
  EXPECT_EQ(static_cast<int64_t>(session.cycleCount()),
            reference("pipelined_cycles").item<int64_t>());
  const popsim::MemoryReport report = session.memoryReport();
  const at::Tensor memory = reference("pipelined_memory");
  ASSERT_EQ(report.ipus.size(), 4u);
  for (size_t ipu = 0; ipu < report.ipus.size(); ++ipu) {
    EXPECT_EQ(static_cast<int64_t>(report.ipus[ipu].total), memory[ipu].item<int64_t>());
    EXPECT_TRUE(report.ipus[ipu].fits());
  }
  EXPECT_EQ(report.chip, "Mk2 (GC200)");
  EXPECT_GT(session.simulatedTime(), 0.0);
  EXPECT_NEAR(session.simulatedTime(), static_cast<double>(session.cycleCount()) / 1.33e9, 1e-12);
}

TEST(PublicApi, ShardedScriptedModelLoadedFromAPath) {
  const at::Tensor images = reference("images");
  popsim::Options options;
  options.deviceIterations(8).setExecutionStrategy(popsim::ShardedExecution(kFourIpus));
  popsim::InferenceSession session(fixtures() + "/mnist_scripted.pt", {images}, options);
  const at::Tensor logits = session.run({images}).at(0);
  EXPECT_TRUE(torch::equal(logits, reference("sharded_outputs")));
  EXPECT_EQ(static_cast<int64_t>(session.cycleCount()),
            reference("sharded_cycles").item<int64_t>());
  // Sharded runs one stage at a time: slower than the pipeline on the simulated clock.
  EXPECT_GT(session.cycleCount(),
            static_cast<uint64_t>(reference("pipelined_cycles").item<int64_t>()));
}

TEST(PublicApi, WeightsGoToTheDeviceAndBack) {
  torch::jit::Module module = load("mnist_traced.pt");
  const at::Tensor images = reference("images");
  module.train();
  popsim::InferenceSession session(module, {images}, pipelined());
  // The caller's flags are as they were.
  EXPECT_TRUE(module.is_training());
  EXPECT_TRUE(module.attr("layer1").toModule().is_training());
  const std::vector<std::string> names = session.weightNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "layer4.bias"), names.end());
  {
    torch::NoGradGuard noGrad;
    session.module().attr("layer4").toModule().attr("bias").toTensor().add_(1.0);
  }
  session.copyWeightsToDevice();
  const at::Tensor shifted = session.run({images}).at(0);
  EXPECT_TRUE(torch::allclose(shifted, reference("pipelined_outputs") + 1.0, 1e-5, 1e-5));
  // The device's weights read back into the module.
  {
    torch::NoGradGuard noGrad;
    session.module().attr("layer4").toModule().attr("bias").toTensor().zero_();
  }
  session.copyWeightsToHost();
  EXPECT_GT(
      session.module().attr("layer4").toModule().attr("bias").toTensor().abs().sum().item<double>(),
      0.0);
}

TEST(PublicApi, NarrowIntegerBuffersAreHeldAsInt32AndKeepTheirDtype) {
  // A uint8 lookup table, read through a conversion: the device holds it as int32.
  torch::jit::Module module("Narrow");
  module.register_buffer("table", torch::tensor({0, 3, 255, 7}, at::kByte));
  module.define("def forward(self, x):\n  return x * self.table.float()\n");
  const at::Tensor x = torch::randn({2, 4});
  popsim::InferenceSession session(module, {x});
  EXPECT_TRUE(torch::equal(session.run({x}).at(0), x * torch::tensor({0.0F, 3.0F, 255.0F, 7.0F})));
  session.module().attr("table").toTensor().fill_(2);
  session.copyWeightsToDevice();
  EXPECT_TRUE(torch::equal(session.run({x}).at(0), x * 2));
  session.copyWeightsToHost();
  const at::Tensor table = session.module().attr("table").toTensor();
  EXPECT_EQ(table.scalar_type(), at::kByte);
  EXPECT_TRUE(torch::equal(table, torch::full({4}, 2, at::kByte)));
}

TEST(PublicApi, CostOnlyGivesTheSameCyclesWithoutValues) {
  const at::Tensor images = reference("images");
  popsim::Options options = pipelined();
  options.Simulator.costOnly();
  popsim::InferenceSession session(load("mnist_traced.pt"), {images}, options);
  const at::Tensor logits = session.run({images}).at(0);
  EXPECT_TRUE(logits.is_meta());
  EXPECT_EQ(logits.sizes(), reference("pipelined_outputs").sizes());
  EXPECT_EQ(static_cast<int64_t>(session.cycleCount()),
            reference("pipelined_cycles").item<int64_t>());
}

TEST(PublicApi, ErrorsAreOfTheirClassesWithPythonsMessages) {
  const at::Tensor images = reference("images");
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::Options().deviceIterations(0); }),
            "deviceIterations expects a positive integer, got 0.");
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::Options().Simulator.ipuVersion("Mk9"); }),
            "Simulator.ipuVersion expects 'Mk1', 'Mk2' or 'Bow', got 'Mk9'.");
  const std::string unknown = messageOf<popsim::OptionError>([&] {
    popsim::Options options;
    options.deviceIterations(8).setExecutionStrategy(
        popsim::PipelinedExecution({{"layer1", 0}, {"layer9", 1}}));
    popsim::InferenceSession(load("mnist_traced.pt"), {images}, options);
  });
  EXPECT_NE(unknown.find("places module 'layer9', but the model has no module of that path "
                         "(its top-level modules: layer1, layer2, layer3, layer3_act, layer4)"),
            std::string::npos)
      << unknown;

  popsim::InferenceSession session(load("mnist_traced.pt"), {images}, pipelined());
  const std::string shape =
      messageOf<popsim::InputError>([&] { session.run({images.narrow(0, 0, 16)}); });
  EXPECT_NE(shape.find("Shape mismatch for x: expected [32, 1, 28, 28] but got [16, 1, 28, 28]"),
            std::string::npos)
      << shape;
  const std::string dtype =
      messageOf<popsim::InputError>([&] { session.run({images.to(at::kDouble)}); });
  EXPECT_NE(dtype.find("Data type mismatch for x: expected Float but got Double"),
            std::string::npos)
      << dtype;

  // Example inputs that do not fit the model are an InputError (not an unsupported op),
  // naming the op and both shapes, with PyTorch's own refusal.
  const std::string channels = messageOf<popsim::InputError>([&] {
    popsim::InferenceSession(load("mnist_traced.pt"), {at::cat({images, images}, 1)}, pipelined());
  });
  EXPECT_NE(channels.find("aten::_convolution at "), std::string::npos) << channels;
  EXPECT_NE(channels.find("its operands do not fit it: convolution: weight f32["),
            std::string::npos)
      << channels;
  EXPECT_NE(channels.find("PyTorch refuses these operands too (Given groups=1"), std::string::npos)
      << channels;

  // A session moved from throws instead of crashing; the one moved into runs.
  popsim::InferenceSession moved = std::move(session);
  EXPECT_EQ(messageOf<popsim::InputError>([&] { session.run({images}); }),
            "This popsim session was moved from (std::move): its compiled model now belongs to "
            "the session it was moved into. Use that session.");
  EXPECT_THROW((void)session.memoryReport(), popsim::InputError);
  EXPECT_EQ(moved.run({images}).size(), 1u);

  popsim::Options small = pipelined();
  small.Simulator.memoryPerIpu("64KiB");
  try {
    popsim::InferenceSession(load("mnist_traced.pt"), {images}, small);
    ADD_FAILURE() << "a 64 KiB IPU holds the network";
  } catch (const popsim::OutOfMemoryError& error) {
    EXPECT_EQ(error.kind(), popsim::ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(error.what()).find("Out of memory on IPU 0"), std::string::npos);
    // Its site holds what Python's OutOfMemoryError has as attributes.
    const Json python = Json::parse(readFile(std::filesystem::path(fixtures()) / "python_profiles" /
                                             "mnist_out_of_memory.json"));
    const popsim::ErrorSite& site = error.site();
    EXPECT_EQ(site.ipu, python["ipu"].get<int64_t>());
    EXPECT_EQ(site.category, python["category"].get<std::string>());
    EXPECT_EQ(site.requiredBytes, python["required_bytes"].get<uint64_t>());
    EXPECT_EQ(site.capacityBytes, python["capacity_bytes"].get<uint64_t>());
    EXPECT_EQ(site.capacityBytes, 64u * 1024u);
    ASSERT_EQ(site.largestTensors.size(), python["largest_tensors"].size());
    for (size_t index = 0; index < site.largestTensors.size(); ++index) {
      const popsim::TensorMemory& tensor = site.largestTensors[index];
      const Json& expected = python["largest_tensors"][index];
      EXPECT_EQ(tensor.type, expected["type"].get<std::string>()) << index;
      EXPECT_EQ(tensor.category, expected["category"].get<std::string>()) << index;
      EXPECT_EQ(tensor.bytes, expected["bytes"].get<uint64_t>()) << index;
      if (tensor.category == "weights") { // other descriptions name source lines
        EXPECT_EQ(tensor.description, expected["description"].get<std::string>()) << index;
      }
    }
    EXPECT_EQ(site.option, "");
  }
  // An option error names its option, from a setter or from compiling.
  try {
    popsim::Options().Training.gradientAccumulation(0);
    ADD_FAILURE() << "gradientAccumulation(0) was accepted";
  } catch (const popsim::OptionError& error) {
    EXPECT_EQ(error.site().option, "Training.gradientAccumulation");
  }
  try {
    popsim::Options once = pipelined();
    once.deviceIterations(1);
    popsim::InferenceSession(load("mnist_traced.pt"), {images.narrow(0, 0, 4)}, once);
    ADD_FAILURE() << "pipelined inference over 4 stages ran 1 device iteration";
  } catch (const popsim::OptionError& error) {
    EXPECT_EQ(error.site().option, "deviceIterations") << error.what();
    EXPECT_EQ(error.site().ipu, -1);
  }
  // LibTorch's own errors arrive as CompilationErrors that quote them.
  torch::jit::Module noForward("NoForward");
  EXPECT_NE(messageOf<popsim::CompilationError>([&] {
              popsim::InferenceSession(noForward, {images}, pipelined());
            }).rfind("LibTorch: ", 0),
            std::string::npos);
  // Every class is a popsim::Error.
  EXPECT_THROW(popsim::Options().prefetchDepth(-1), popsim::Error);
}

// The message of the error `body` throws, caught as a LibTorch program
// catches errors, after checking it is also of popsim's class ErrorClass.
template <typename ErrorClass, typename Body> std::string caughtAsLibTorchError(Body&& body) {
  try {
    body();
  } catch (const c10::Error& error) {
    EXPECT_NE(dynamic_cast<const ErrorClass*>(&error), nullptr) << error.what();
    EXPECT_STREQ(error.what(), error.what_without_backtrace()); // no backtrace added
    return error.what();
  }
  ADD_FAILURE() << "no c10::Error was thrown";
  return "";
}

TEST(PublicApi, ErrorsAreCaughtAsLibTorchErrorsAndStandardExceptions) {
  // One from the API's options, one from the core (a call's input), one from
  // LibTorch (a module without forward()): each a c10::Error of its class,
  // with the message alone, and a std::exception.
  const auto badOption = [] { popsim::Options().deviceIterations(0); };
  EXPECT_EQ(caughtAsLibTorchError<popsim::OptionError>(badOption),
            messageOf<popsim::OptionError>(badOption));
  torch::jit::Module module = load("mnist_traced.pt");
  const at::Tensor images = reference("images");
  popsim::InferenceSession session(module, {images}, pipelined());
  const auto badInput = [&] { session.run({images.narrow(0, 0, 16)}); };
  EXPECT_EQ(caughtAsLibTorchError<popsim::InputError>(badInput),
            messageOf<popsim::InputError>(badInput));
  torch::jit::Module noForward("NoForward");
  EXPECT_EQ(caughtAsLibTorchError<popsim::CompilationError>([&] {
              popsim::InferenceSession(noForward, {images}, pipelined());
            }).rfind("LibTorch: ", 0),
            0u);
  // A model file that cannot be read: the model cannot be compiled.
  EXPECT_EQ(caughtAsLibTorchError<popsim::CompilationError>(
                [&] { popsim::InferenceSession("no-such-model.pt", {images}, pipelined()); })
                .rfind("cannot load a TorchScript module from 'no-such-model.pt' (write it with "
                       "torch.jit.save): ",
                       0),
            0u);
  try {
    badOption();
  } catch (const std::exception& error) {
    EXPECT_EQ(error.what(), messageOf<popsim::OptionError>(badOption));
  }
}

popsim::Options trainingOptions() {
  popsim::Options options;
  options.deviceIterations(2).Training.gradientAccumulation(8);
  options.setExecutionStrategy(popsim::PipelinedExecution(
      {{"model.layer1", 0}, {"model.layer2", 1}, {"model.layer3", 2}, {"model.layer4", 3}}));
  return options;
}

TEST(PublicApi, TrainingMatchesPython) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  popsim::TrainingSession session(load("mnist_training.pt"), {images, labels}, trainingOptions(),
                                  popsim::optim::SGD(0.05).momentum(0.9));
  const std::vector<at::Tensor> outputs = session.run({images, labels});
  ASSERT_EQ(outputs.size(), 2u); // the last micro-batch's logits and loss
  EXPECT_TRUE(torch::equal(outputs[0], reference("train_logits")));
  EXPECT_TRUE(torch::equal(outputs[1].reshape({1}), reference("train_loss")));
  EXPECT_EQ(static_cast<int64_t>(session.cycleCount()), reference("train_cycles").item<int64_t>());
  // The trained weights, copied home, are Python's.
  session.copyWeightsToHost();
  int compared = 0;
  for (const auto& parameter : session.module().named_parameters(true)) {
    std::string key = "trained_" + parameter.name;
    std::replace(key.begin(), key.end(), '.', '_');
    EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << parameter.name;
    ++compared;
  }
  EXPECT_EQ(compared, 8);
}

// Python's LAMB and (centered, TensorFlow's) RMSprop, and SGD summing or
// keeping a running mean of the micro-batches' gradients, on the same model
// and options.
TEST(PublicApi, OptimizersAndReductionsMatchPython) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  popsim::Options sum = trainingOptions();
  sum.Training.accumulationAndReplicationReductionType(popsim::ReductionType::Sum);
  popsim::Options running = trainingOptions();
  running.Training.setMeanAccumulationAndReplicationReductionStrategy(
      popsim::MeanReductionStrategy::Running);
  const std::vector<std::tuple<std::string, popsim::Optimizer, popsim::Options>> cases = {
      {"lamb", popsim::optim::LAMB(0.01).maxWeightNorm(10.0), trainingOptions()},
      {"rmsprop",
       popsim::optim::RMSprop(0.001).alpha(0.9).momentum(0.5).centered(true).useTfVariant(true),
       trainingOptions()},
      {"sum", popsim::optim::SGD(0.005).momentum(0.9), sum},
      {"running", popsim::optim::SGD(0.05).momentum(0.9), running}};
  for (const auto& [prefix, optimizer, options] : cases) {
    popsim::TrainingSession session(load("mnist_training.pt"), {images, labels}, options,
                                    optimizer);
    const std::vector<at::Tensor> outputs = session.run({images, labels});
    EXPECT_TRUE(torch::equal(outputs[1].reshape({1}), reference(prefix + "_loss"))) << prefix;
    EXPECT_EQ(static_cast<int64_t>(session.cycleCount()),
              reference(prefix + "_cycles").item<int64_t>())
        << prefix;
    session.copyWeightsToHost();
    for (const auto& parameter : session.module().named_parameters(true)) {
      std::string key = prefix + "_trained_" + parameter.name;
      std::replace(key.begin(), key.end(), '.', '_');
      EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << prefix << " " << parameter.name;
    }
  }
}

at::Tensor layer4Weight(popsim::TrainingSession& session) {
  session.copyWeightsToHost();
  return session.module()
      .attr("model")
      .toModule()
      .attr("layer4")
      .toModule()
      .attr("weight")
      .toTensor()
      .clone();
}

TEST(PublicApi, TrainingLearnsAndTakesNewHyperparameters) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  popsim::TrainingSession session(load("mnist_training.pt"), {images, labels}, trainingOptions(),
                                  popsim::optim::AdamW(1e-3));
  const double first = session.run({images, labels}).at(1).item<double>();
  for (int call = 0; call < 10; ++call)
    session.run({images, labels});
  const double later = session.run({images, labels}).at(1).item<double>();
  EXPECT_LT(later, first); // the same batches, learned
  // A learning rate of 0 freezes the weights.
  session.setOptimizer(popsim::optim::AdamW(0.0));
  const at::Tensor before = layer4Weight(session);
  session.run({images, labels});
  EXPECT_TRUE(torch::equal(before, layer4Weight(session)));
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              session.setOptimizer(popsim::optim::SGD(0.1));
            }).rfind("setOptimizer can change numeric hyper-parameters", 0),
            0u);
  EXPECT_EQ(messageOf<popsim::OptionError>(
                [] { popsim::Optimizer(popsim::optim::LAMB(1e-3).amsgrad(true)); }),
            "popsim::optim::LAMB has no amsgrad variant (PopTorch's LAMB has none); leave amsgrad "
            "off.");
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::optim::SGD(-1.0); }),
            "popsim::optim::SGD: invalid lr -1 (expected >= 0).");
}

std::vector<at::Tensor> parametersOf(const torch::jit::Module& module) {
  std::vector<at::Tensor> parameters;
  for (const at::Tensor& parameter : module.parameters())
    parameters.push_back(parameter);
  return parameters;
}

// A weight two submodules share is one tensor: a session built with popsim's
// optimizer trains it once, and a torch::optim optimizer over the module's
// parameters later fits that session.
TEST(PublicApi, ATiedWeightIsTrainedOnceWhicheverOptimizerNamesIt) {
  const at::Tensor x = reference("tied_inputs");
  torch::jit::Module module = load("tied.pt");
  popsim::TrainingSession session(module, {x}, popsim::Options(), popsim::optim::SGD(0.1));
  session.run({x});
  torch::optim::SGD sgd(parametersOf(module), torch::optim::SGDOptions(0.05));
  session.setOptimizer(sgd);
  session.run({x});
}

TEST(PublicApi, LibTorchOptimizersAndSchedulersTrainAsPopsims) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  torch::jit::Module module = load("mnist_training.pt");
  torch::optim::SGD sgd(parametersOf(module), torch::optim::SGDOptions(0.05).momentum(0.9));
  popsim::TrainingSession fromLibTorch(module, {images, labels}, trainingOptions(), sgd);
  popsim::TrainingSession fromPopsim(load("mnist_training.pt"), {images, labels}, trainingOptions(),
                                     popsim::optim::SGD(0.05).momentum(0.9));
  fromLibTorch.run({images, labels});
  fromPopsim.run({images, labels});
  EXPECT_TRUE(torch::equal(layer4Weight(fromLibTorch), layer4Weight(fromPopsim)));
  // A scheduler's step reaches the session through setOptimizer.
  torch::optim::StepLR schedule(sgd, /*step_size=*/1, /*gamma=*/0.5);
  schedule.step(); // (LibTorch's first step keeps the initial rate)
  schedule.step();
  ASSERT_EQ(sgd.param_groups()[0].options().get_lr(), 0.025);
  fromLibTorch.setOptimizer(sgd);
  fromPopsim.setOptimizer(popsim::optim::SGD(0.025).momentum(0.9));
  fromLibTorch.run({images, labels});
  fromPopsim.run({images, labels});
  EXPECT_TRUE(torch::equal(layer4Weight(fromLibTorch), layer4Weight(fromPopsim)));
  // torch::optim's names become popsim's hyper-parameters.
  const popsim::Optimizer adamw = popsim::optimizerOf(torch::optim::AdamW(
      parametersOf(module),
      torch::optim::AdamWOptions(1e-3).betas({0.8, 0.95}).weight_decay(0.1).amsgrad(true)));
  EXPECT_EQ(adamw.kind(), popsim::Optimizer::Kind::AdamW);
  EXPECT_EQ(adamw.hyperparameters().at("beta1"), 0.8);
  EXPECT_EQ(adamw.hyperparameters().at("weight_decay"), 0.1);
  EXPECT_TRUE(adamw.amsgrad());
}

TEST(PublicApi, LibTorchParameterGroupsTrainEachWithItsOptionsAsPython) {
  // The first layer's parameters with lr 0.1 and momentum, the rest with the defaults (lr 0.01,
  // no momentum), as Python's popsim.optim.SGD with the same groups.
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  torch::jit::Module module = load("mnist_training.pt");
  const std::vector<at::Tensor> parameters = parametersOf(module);
  torch::optim::SGD sgd(
      {torch::optim::OptimizerParamGroup(
          {parameters.begin(), parameters.begin() + 2},
          std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.1).momentum(0.9)))},
      torch::optim::SGDOptions(0.01));
  sgd.add_param_group(
      torch::optim::OptimizerParamGroup({parameters.begin() + 2, parameters.end()}));
  popsim::TrainingSession session(module, {images, labels}, trainingOptions(), sgd);
  const std::vector<at::Tensor> outputs = session.run({images, labels});
  EXPECT_TRUE(torch::equal(outputs[1].reshape({1}), reference("grouped_loss")));
  session.copyWeightsToHost();
  for (const auto& parameter : session.module().named_parameters(true)) {
    std::string key = "grouped_trained_" + parameter.name;
    std::replace(key.begin(), key.end(), '.', '_');
    EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << parameter.name;
  }
  // A scheduler's new rates reach each group; other groups need another session.
  torch::optim::StepLR schedule(sgd, /*step_size=*/1, /*gamma=*/0.5);
  schedule.step();
  schedule.step();
  session.setOptimizer(sgd);
  session.run({images, labels});
  torch::optim::SGD regrouped(parameters, torch::optim::SGDOptions(0.01));
  EXPECT_NE(messageOf<popsim::OptionError>([&] {
              session.setOptimizer(regrouped);
            }).find("or the parameter groups: they are compiled into the program"),
            std::string::npos);
  // One popsim optimizer is one set of options.
  EXPECT_EQ(messageOf<popsim::OptionError>([&] { popsim::optimizerOf(sgd); }),
            "The torch::optim optimizer's parameter groups 0 and 1 differ in lr 0.05 and "
            "0.005; one popsim optimizer has one set of options. Pass the torch::optim "
            "optimizer to the TrainingSession instead, which trains each group with its own.");
}

TEST(PublicApi, LibTorchOptimizersThatDoNotFitASessionAreRefused) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  torch::jit::Module module = load("mnist_training.pt");
  std::vector<at::Tensor> parameters = parametersOf(module);
  // Over some of the module's parameters only: the session would train the others too.
  torch::optim::SGD some(std::vector<at::Tensor>(parameters.begin(), parameters.begin() + 2),
                         torch::optim::SGDOptions(0.1));
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              popsim::TrainingSession(module, {images, labels}, trainingOptions(), some);
            })
                .rfind("The torch::optim optimizer's parameters are not the module's 8 parameters "
                       "that require a gradient, which the session trains: it leaves out ",
                       0),
            0u);
  // Over every parameter, frozen ones included (a torch::optim step skips those), it fits.
  torch::jit::Module partlyFrozen = load("mnist_training.pt");
  std::vector<at::Tensor> all = parametersOf(partlyFrozen);
  all.front().requires_grad_(false);
  popsim::TrainingSession(partlyFrozen, {images, labels}, trainingOptions(),
                          torch::optim::SGD(all, torch::optim::SGDOptions(0.1)));
  torch::optim::Adagrad adagrad(parameters);
  EXPECT_EQ(messageOf<popsim::OptionError>([&] { popsim::optimizerOf(adagrad); }),
            "popsim's sessions run torch::optim::SGD, Adam, AdamW and RMSprop (and "
            "popsim::optim::LAMB); this torch::optim optimizer is none of them.");
}

TEST(PublicApi, ScriptedControlFlowDecidedWhenCompilingRuns) {
  // Batch norm's training flag, adaptive pooling, cross entropy's None checks, a shape check
  // and a loop of 2: each decided when the model compiles, in eval and in train mode.
  const at::Tensor images = reference("control_images");
  const at::Tensor labels = reference("control_labels");
  torch::jit::Module evaluated = load("control_flow.pt");
  evaluated.eval();
  popsim::InferenceSession session(evaluated, {images, labels});
  const std::vector<at::Tensor> outputs = session.run({images, labels});
  EXPECT_TRUE(torch::allclose(outputs.at(0), reference("control_eval_logits"), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(outputs.at(1), reference("control_eval_loss"), 1e-5, 1e-6));
  // In train mode (as the file holds it), inference normalises with the batch's statistics,
  // as LibTorch's forward() does.
  popsim::InferenceSession inTrainMode(load("control_flow.pt"), {images, labels});
  EXPECT_TRUE(torch::allclose(inTrainMode.run({images, labels}).at(0),
                              reference("control_train_logits"), 1e-5, 1e-6));
  // Sharded over two IPUs by module: batch norm's ops, inside its branches, run on IPU 1.
  popsim::Options sharded;
  sharded.setExecutionStrategy(
      popsim::ShardedExecution({{"conv", 0}, {"norm", 1}, {"pool", 1}, {"head", 1}}));
  popsim::InferenceSession split(evaluated, {images, labels}, sharded);
  EXPECT_TRUE(torch::equal(split.run({images, labels}).at(0), outputs.at(0)));
  EXPECT_NE(split.programText().find("ipu 1"), std::string::npos);
  torch::jit::Module training = load("control_flow.pt");
  training.train();
  popsim::TrainingSession trainer(training, {images, labels}, popsim::Options(),
                                  popsim::optim::SGD(0.0));
  const std::vector<at::Tensor> trained = trainer.run({images, labels});
  EXPECT_TRUE(torch::allclose(trained.at(0), reference("control_train_logits"), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(trained.at(1), reference("control_train_loss"), 1e-5, 1e-6));
  // A branch a tensor decides at runtime is refused, saying why.
  const std::string message = messageOf<popsim::UnsupportedOperationError>(
      [&] { popsim::InferenceSession(load("runtime_decision.pt"), {images.flatten(1)}); });
  EXPECT_NE(message.find("aten::Bool at "), std::string::npos) << message;
  // At the user's line, which the saved module keeps beside its serialized code.
  const std::string line =
      "make_reference.py:" + std::to_string(reference("runtime_decision_line").item<int64_t>());
  EXPECT_NE(message.find(line), std::string::npos) << message;
  EXPECT_NE(message.find("it turns a tensor computed at runtime into a Python number or bool"),
            std::string::npos)
      << message;
}

TEST(PublicApi, NestedInputsAndOutputsAreAsForwardTakesAndReturnsThem) {
  // forward((a, b), {"scale": ..., "shift": ...}, [e0, e1]) -> ({"logits", "relu"}, [..., ...])
  const at::Tensor a = reference("nested_a"), b = reference("nested_b");
  const at::Tensor scale = reference("nested_scale"), shift = reference("nested_shift");
  const auto batchOf = [](std::vector<std::pair<std::string, at::Tensor>> entries) {
    c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
    for (auto& [key, value] : entries)
      dict.insert(key, value);
    return dict;
  };
  const c10::List<at::Tensor> extra({reference("nested_extra0"), reference("nested_extra1")});
  const std::vector<c10::IValue> inputs{c10::ivalue::Tuple::create({a, b}),
                                        batchOf({{"scale", scale}, {"shift", shift}}), extra};
  popsim::InferenceSession session(load("nested.pt"), inputs);
  const c10::IValue result = session.forward(inputs);
  ASSERT_TRUE(result.isTuple());
  const c10::impl::GenericDict outputs = result.toTupleRef().elements().at(0).toGenericDict();
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs.begin()->key().toStringRef(), "logits"); // the model's key order
  EXPECT_TRUE(
      torch::allclose(outputs.at("logits").toTensor(), reference("nested_logits"), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(outputs.at("relu").toTensor(), reference("nested_relu"), 1e-5, 1e-6));
  const std::vector<at::Tensor> listed = result.toTupleRef().elements().at(1).toTensorVector();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_TRUE(torch::allclose(listed[0], reference("nested_listed0"), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(listed[1], reference("nested_listed1"), 1e-5, 1e-5));
  // run() gives the same tensors, flattened depth-first.
  const std::vector<at::Tensor> flat = session.run(inputs);
  ASSERT_EQ(flat.size(), 4u);
  EXPECT_TRUE(torch::equal(flat[0], outputs.at("logits").toTensor()));
  EXPECT_TRUE(torch::equal(flat[3], listed[1]));
  // A dict's keys may come in another order; its tensors are found by key.
  const std::vector<c10::IValue> reordered{c10::ivalue::Tuple::create({a, b}),
                                           batchOf({{"shift", shift}, {"scale", scale}}), extra};
  EXPECT_TRUE(torch::equal(session.run(reordered)[0], flat[0]));
  // Another nesting or another set of keys is refused, naming the input.
  const std::vector<c10::IValue> missing{c10::ivalue::Tuple::create({a, b}),
                                         batchOf({{"scale", scale}}), extra};
  std::string message = messageOf<popsim::InputError>([&] { session.run(missing); });
  EXPECT_NE(message.find("Input 'batch' is a dict with keys ['scale'] but the session was "
                         "compiled for a dict with keys ['scale', 'shift']"),
            std::string::npos)
      << message;
  message = messageOf<popsim::InputError>([&] {
    session.run(std::vector<c10::IValue>{a, inputs[1], inputs[2]});
  });
  EXPECT_NE(message.find("Input 'pair' is a tensor but the session was compiled for a tuple of 2"),
            std::string::npos)
      << message;
  // Example inputs that forward() does not take are refused when compiling, tensors too.
  message = messageOf<popsim::InputError>([&] {
    popsim::InferenceSession(load("nested.pt"), {a, scale, shift});
  });
  EXPECT_NE(message.find("forward() takes Tuple[Tensor, Tensor] where the example input (pair) "
                         "is a tensor"),
            std::string::npos)
      << message;
  // A dict without a key the model reads does not fit it.
  message = messageOf<popsim::InputError>([&] {
    popsim::InferenceSession(
        load("nested.pt"), std::vector<c10::IValue>{inputs[0], batchOf({{"shift", shift}}), extra});
  });
  EXPECT_NE(message.find("Input 'batch' is a dict with keys ['shift'], but the model reads its "
                         "key 'scale' at "),
            std::string::npos)
      << message;
}

// (image, label) pairs, as a torch::data program's dataset gives them.
class ImagesAndLabels : public torch::data::datasets::Dataset<ImagesAndLabels> {
public:
  ImagesAndLabels(at::Tensor images, at::Tensor labels)
      : images_(std::move(images)), labels_(std::move(labels)) {}
  torch::data::Example<> get(size_t index) override { return {images_[index], labels_[index]}; }
  torch::optional<size_t> size() const override { return images_.size(0); }

private:
  at::Tensor images_, labels_;
};

TEST(PublicApi, ATorchDataLoaderFeedsASessionACallPerBatch) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  popsim::TrainingSession fed(load("mnist_training.pt"), {images, labels}, trainingOptions(),
                              popsim::optim::SGD(0.05));
  popsim::TrainingSession byHand(load("mnist_training.pt"), {images, labels}, trainingOptions(),
                                 popsim::optim::SGD(0.05));
  EXPECT_EQ(fed.combinedBatchSize(), images.size(0)); // 4 x 2 device iterations x 8
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      ImagesAndLabels(at::cat({images, images.flip(0)}), at::cat({labels, labels.flip(0)}))
          .map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions(fed.combinedBatchSize()).drop_last(true));
  int calls = 0;
  for (torch::data::Example<>& batch : *loader) {
    fed.run(batch);
    ++calls;
  }
  EXPECT_EQ(calls, 2);
  byHand.run({images, labels});
  byHand.run({images.flip(0), labels.flip(0)});
  EXPECT_TRUE(torch::equal(layer4Weight(fed), layer4Weight(byHand)));
  // An inference session takes a batch's data.
  const at::Tensor test = reference("images");
  popsim::InferenceSession inference(load("mnist_traced.pt"), {test}, pipelined());
  EXPECT_EQ(inference.combinedBatchSize(), test.size(0));
  EXPECT_TRUE(torch::equal(inference.run(torch::data::Example<>(test, at::Tensor())).at(0),
                           inference.run({test}).at(0)));
}

uint64_t categoryBytes(const popsim::IpuMemory& ipu, const std::string& name) {
  for (const popsim::MemoryCategory& category : ipu.categories)
    if (category.name == name) return category.bytes;
  return 0;
}

TEST(PublicApi, OptimizerStateOffChipLeavesTheIpusMemoryAndCostsTransfers) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  popsim::TrainingSession onChip(load("mnist_training.pt"), {images, labels}, trainingOptions(),
                                 popsim::optim::Adam(1e-3));
  popsim::Options options = trainingOptions();
  options.TensorLocations.setOptimizerLocation(
      popsim::TensorLocationSettings().useOnChipStorage(false));
  popsim::TrainingSession offChip(load("mnist_training.pt"), {images, labels}, options,
                                  popsim::optim::Adam(1e-3));
  const std::vector<at::Tensor> expected = onChip.run({images, labels});
  const std::vector<at::Tensor> got = offChip.run({images, labels});
  EXPECT_TRUE(torch::equal(expected[1], got[1]));       // the same arithmetic
  EXPECT_GT(offChip.cycleCount(), onChip.cycleCount()); // streaming the state costs time
  const popsim::MemoryReport onReport = onChip.memoryReport();
  const popsim::MemoryReport offReport = offChip.memoryReport();
  EXPECT_GT(categoryBytes(onReport.ipus[2], "optimizer state"), 100000u);
  EXPECT_LT(categoryBytes(offReport.ipus[2], "optimizer state"),
            categoryBytes(onReport.ipus[2], "optimizer state") / 100);
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              popsim::Options io = trainingOptions();
              io.TensorLocations.setOptimizerLocation(
                  popsim::TensorLocationSettings().useOnChipStorage(false).useIOTilesToLoad());
              popsim::TrainingSession(load("mnist_training.pt"), {images, labels}, io);
            }),
            "TensorLocations.setOptimizerLocation: useIOTilesToLoad(true) streams the tensors "
            "through IO tiles, but none are set aside. Use Options.TensorLocations.numIOTiles(n) "
            "(32 to 192), or turn it off.");
}

TEST(PublicApi, TrainingNeedsEnoughMicroBatchesForThePipeline) {
  const at::Tensor images = reference("train_images");
  const at::Tensor labels = reference("train_labels");
  popsim::Options options = trainingOptions();
  options.Training.gradientAccumulation(2);
  const std::string message = messageOf<popsim::OptionError>([&] {
    popsim::TrainingSession(load("mnist_training.pt"),
                            {images.narrow(0, 0, 16), labels.narrow(0, 0, 16)}, options);
  });
  EXPECT_NE(message.find("gradientAccumulation"), std::string::npos) << message;
  EXPECT_NE(message.find("or use popsim::ShardedExecution."), std::string::npos) << message;
}

TEST(PublicApi, OptionsParseSizesAndIpuNamesAsPythonDoes) {
  popsim::Options options;
  EXPECT_EQ(options.Simulator.memoryPerIpu("64MiB").memoryPerIpu(), 64u * 1024 * 1024);
  EXPECT_EQ(options.Simulator.memoryPerIpu(" 1.5 GB ").memoryPerIpu(), 1500000000u);
  EXPECT_EQ(options.Simulator.memoryPerIpu(".5KiB").memoryPerIpu(), 512u);
  EXPECT_EQ(options.Simulator.memoryPerIpu("4096").memoryPerIpu(), 4096u);
  for (const char* bad : {"64 MiBs", "5.", "1..5MB", "MiB", "0.1B", "64MiB x"}) {
    EXPECT_EQ(messageOf<popsim::OptionError>([&] { options.Simulator.memoryPerIpu(bad); }),
              std::string("Simulator.memoryPerIpu expects a size in bytes or a string such as "
                          "'64MiB' or '512KB', got '") +
                  bad + "'.")
        << bad;
  }
  options.setAvailableMemoryProportion({{"IPU0", 0.3}, {"IPU12", 0.5}});
  EXPECT_EQ(options.availableMemoryProportion().at(12), 0.5);
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              options.setAvailableMemoryProportion({{"ipu0", 0.3}});
            }),
            "setAvailableMemoryProportion: key 'ipu0' should name an IPU as 'IPU<n>', such as "
            "'IPU0'.");
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              options.setAvailableMemoryProportion({{"IPU1", 1.5}});
            }),
            "setAvailableMemoryProportion: the proportion for IPU1 must be a number in (0, 1], "
            "got 1.5.");
}

// Without source locations, which differ by nature: Python's point into the
// model's .py file, the TorchScript file's into its serialized code.
void dropLocations(Json& value) {
  if (value.is_object()) {
    value.erase("location");
    if (value.contains("description") && value["description"].is_string()) {
      value["description"] = std::regex_replace(value["description"].get<std::string>(),
                                                std::regex(" at [^ ]+:[0-9]+"), " at LOCATION");
    }
  }
  if (value.is_structured()) {
    for (auto& item : value)
      dropLocations(item);
  }
}

Json memoryJson(const std::filesystem::path& directory) {
  Json memory = Json::parse(readFile(directory / "memory.json"));
  dropLocations(memory);
  return memory;
}

// trace.json without what the host measured: the host process's events
// (process 1), the compile time and the call's wall time.
Json simulatedTrace(const std::filesystem::path& directory) {
  Json trace = Json::parse(readFile(directory / "trace.json"));
  trace["popsim"].erase("compile_seconds");
  trace["popsim"].erase("host");
  Json& events = trace["traceEvents"];
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const Json& event) { return event["pid"] == 1; }),
               events.end());
  dropLocations(trace);
  return trace;
}

// report.html with the profile's directory, named in its summary, as DIR and
// without the host's numbers of the last call.
std::string reportWithoutHost(const std::filesystem::path& directory) {
  std::string page = readFile(directory / "report.html");
  const std::string name = directory.string();
  for (size_t at = page.find(name); at != std::string::npos; at = page.find(name, at + 3)) {
    page.replace(at, name.size(), "DIR");
  }
  return std::regex_replace(page, std::regex(R"(id="host-data">[^<]*<)"), "id=\"host-data\"><");
}

// The session's profile against Python's for the same model and options.
void expectPythonsProfile(const std::string& directory, const std::string& model) {
  const std::filesystem::path python =
      std::filesystem::path(fixtures()) / "python_profiles" / model;
  EXPECT_EQ(memoryJson(directory), memoryJson(python)) << model;
  const Json trace = simulatedTrace(directory);
  EXPECT_EQ(trace, simulatedTrace(python)) << model;
  EXPECT_TRUE(trace["popsim"].contains("sizing")); // the call's sizing report is in it
  EXPECT_EQ(reportWithoutHost(directory), reportWithoutHost(python)) << model;
}

TEST(PublicApi, ProfilesAreWrittenAsPythonWritesThem) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() /
                                     ("popsim_api_profiles_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  const at::Tensor images = reference("images");
  popsim::Options options = pipelined();
  options.enableProfiling(root.string()).modelName("mnist");
  popsim::InferenceSession session(load("mnist_traced.pt"), {images}, options);
  EXPECT_EQ(session.profileDirectory(), (root / "mnist").string());
  EXPECT_TRUE(std::filesystem::exists(root / "mnist" / "memory.json")); // written at compile time
  session.run({images});
  session.run({images}); // the second call's files say so
  expectPythonsProfile(session.profileDirectory(), "mnist");
  EXPECT_EQ(Json::parse(readFile(root / "mnist" / "trace.json"))["popsim"]["host"]["calls"], 2);

  popsim::Options training = trainingOptions();
  training.enableProfiling(root.string()).modelName("mnist_training");
  popsim::TrainingSession trainer(load("mnist_training.pt"),
                                  {reference("train_images"), reference("train_labels")}, training,
                                  popsim::optim::SGD(0.05).momentum(0.9));
  trainer.run({reference("train_images"), reference("train_labels")});
  expectPythonsProfile(trainer.profileDirectory(), "mnist_training");
  // A second session of a name gets a directory of its own; no profile, no directory.
  EXPECT_EQ(popsim::InferenceSession(load("mnist_traced.pt"), {images}, options).profileDirectory(),
            (root / "mnist_1").string());
  EXPECT_EQ(
      popsim::InferenceSession(load("mnist_traced.pt"), {images}, pipelined()).profileDirectory(),
      "");
  std::filesystem::remove_all(root);
  // Python's checks and messages.
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::Options().enableProfiling(""); }),
            "enableProfiling expects a directory path (a non-empty string), got ''.");
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::Options().modelName("a/b"); }),
            "modelName expects a non-empty name without '/' (it names a directory), got 'a/b'.");
  const std::string file = fixtures() + "/reference.pt";
  EXPECT_EQ(messageOf<popsim::OptionError>([&] { popsim::Options().enableProfiling(file); }),
            "enableProfiling expects a directory, but '" + file +
                "' is a file. Pass a new or existing directory; popsim creates it when a model "
                "compiles.");
  // POPSIM_PROFILE_DIR stands in for options that leave the directory unset,
  // and a bad one fails before anything compiles.
  ::setenv("POPSIM_PROFILE_DIR", file.c_str(), 1);
  EXPECT_EQ(messageOf<popsim::OptionError>(
                [&] { popsim::InferenceSession(load("mnist_traced.pt"), {images}, pipelined()); }),
            "POPSIM_PROFILE_DIR expects a directory, but '" + file +
                "' is a file. Pass a new or existing directory; popsim creates it when a model "
                "compiles.");
  ::setenv("POPSIM_PROFILE_DIR", root.c_str(), 1);
  EXPECT_EQ(
      popsim::InferenceSession(load("mnist_traced.pt"), {images}, pipelined()).profileDirectory(),
      (root / "inference").string());
  ::unsetenv("POPSIM_PROFILE_DIR");
  std::filesystem::remove_all(root);
}

// An op mixing float16 and float32 operands computes as halfFloatCasting says,
// as in Python: in float32 by PyTorch's promotion, or in float16.
TEST(PublicApi, HalfFloatCastingDecidesTheDtypeOfMixedOpsAsInPython) {
  const at::Tensor inputs = reference("mixed_inputs");
  for (const auto& [name, behaviour] :
       {std::pair{"upcast", popsim::HalfFloatCastingBehavior::HalfUpcastToFloat},
        std::pair{"downcast", popsim::HalfFloatCastingBehavior::FloatDowncastToHalf}}) {
    popsim::Options options;
    options.deviceIterations(8).Precision.halfFloatCasting(behaviour);
    popsim::InferenceSession session(load("mixed.pt"), {inputs}, options);
    const at::Tensor output = session.run({inputs})[0];
    const at::Tensor expected = reference(std::string("mixed_") + name);
    EXPECT_EQ(output.scalar_type(), expected.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(output, expected)) << name;
  }
  EXPECT_EQ(reference("mixed_upcast").scalar_type(), at::kFloat);
  EXPECT_EQ(reference("mixed_downcast").scalar_type(), at::kHalf);
}

// The sizing report of a call is Python's for the same model and options,
// printout included, and its figures add up.
TEST(PublicApi, SizingReportsArePythons) {
  const at::Tensor images = reference("images");
  popsim::InferenceSession session(load("mnist_traced.pt"), {images}, pipelined());
  EXPECT_EQ(messageOf<popsim::InputError>([&] { (void)session.sizingReport(); }),
            "sizingReport() needs a call: the simulated clock times the last call. Run the "
            "session once (with Simulator.costOnly() it computes nothing).");
  session.run({images});
  const popsim::SizingReport report = session.sizingReport();
  const std::filesystem::path python = std::filesystem::path(fixtures()) / "python_profiles";
  EXPECT_EQ(report.text(), readFile(python / "mnist_sizing.txt"));
  EXPECT_EQ(report.callCycles, session.cycleCount());
  EXPECT_EQ(report.itemsPerCall, 32);
  EXPECT_DOUBLE_EQ(report.throughput(), 32 / report.callSeconds());
  EXPECT_TRUE(report.fits());
  ASSERT_EQ(report.ipus.size(), 4u);
  for (const popsim::IpuSizing& ipu : report.ipus) {
    uint64_t cycles = 0;
    for (uint64_t part : ipu.timeCycles)
      cycles += part;
    EXPECT_EQ(cycles, report.callCycles) << "IPU " << ipu.ipu;
  }
  EXPECT_GT(report.ipus[3].cycles(popsim::TimePart::PipelineFillAndDrain), 0u);
  std::ostringstream printed;
  printed << report;
  EXPECT_EQ(printed.str(), report.text() + "\n");
  // Cost-only, the same job is sized without computing: the same cycles.
  popsim::Options costOnly = pipelined();
  costOnly.Simulator.costOnly();
  popsim::InferenceSession sizing(load("mnist_traced.pt"), {images}, costOnly);
  sizing.run({images});
  EXPECT_TRUE(sizing.sizingReport().costOnly);
  EXPECT_EQ(sizing.sizingReport().callCycles, report.callCycles);
  EXPECT_NE(sizing.sizingReport().overviewLines()[0].find("(cost-only: nothing was computed)"),
            std::string::npos);
  // Training: two optimizer steps of 8 micro-batches.
  popsim::TrainingSession trainer(load("mnist_training.pt"),
                                  {reference("train_images"), reference("train_labels")},
                                  trainingOptions(), popsim::optim::SGD(0.05).momentum(0.9));
  trainer.run({reference("train_images"), reference("train_labels")});
  EXPECT_EQ(trainer.sizingReport().text(), readFile(python / "mnist_training_sizing.txt"));
  EXPECT_EQ(trainer.sizingReport().microBatchesPerStep, 8);
  EXPECT_EQ(std::string(popsim::timePartName(popsim::TimePart::HostIo)), "host I/O");
}

// Replicas run as Python's: a call's batch holds both replicas' micro-batches,
// outputs come back as Python joins them, and training sums the replicas'
// gradients, giving Python's bits, cycles and trained weights.
TEST(PublicApi, ReplicasRunAsInPython) {
  popsim::Options options = pipelined();
  options.replicationFactor(2);
  EXPECT_EQ(options.replicationFactor(), 2);
  popsim::InferenceSession session(load("mnist_traced.pt"), {reference("replicated_images")},
                                   options);
  const at::Tensor outputs = session.run({reference("replicated_images")}).at(0);
  EXPECT_TRUE(torch::equal(outputs, reference("replicated_outputs")));
  EXPECT_EQ(static_cast<int64_t>(session.cycleCount()),
            reference("replicated_cycles").item<int64_t>());
  EXPECT_EQ(outputs.size(0), 64);

  popsim::Options training = trainingOptions();
  training.replicationFactor(2);
  const std::vector<at::Tensor> inputs = {reference("replicated_train_images"),
                                          reference("replicated_train_labels")};
  popsim::TrainingSession trainer(load("mnist_training.pt"), inputs, training,
                                  popsim::optim::SGD(0.05).momentum(0.9));
  const std::vector<at::Tensor> results = trainer.run(inputs);
  EXPECT_TRUE(torch::equal(results.at(0), reference("replicated_logits")));
  EXPECT_TRUE(torch::equal(results.at(1), reference("replicated_loss")));
  EXPECT_EQ(static_cast<int64_t>(trainer.cycleCount()),
            reference("replicated_train_cycles").item<int64_t>());
  trainer.copyWeightsToHost();
  for (const auto& parameter : trainer.module().named_parameters(true)) {
    std::string key = "replicated_trained_" + parameter.name;
    std::replace(key.begin(), key.end(), '.', '_');
    EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << parameter.name;
  }
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::Options().replicationFactor(0); }),
            "replicationFactor expects a positive integer, got 0.");
}

// Replicated tensor sharding (host/tensor_sharding.h, Python's rule): each
// replica keeps a shard of the optimizer state and of the weights, and the
// training ends where whole tensors' ends.
TEST(PublicApi, ReplicatedTensorShardingTrainsAsWholeTensors) {
  const std::vector<at::Tensor> inputs = {reference("replicated_train_images"),
                                          reference("replicated_train_labels")};
  const auto train = [&](bool sharded, const popsim::Optimizer& optimizer) {
    popsim::Options options = trainingOptions();
    options.replicationFactor(2);
    if (sharded) {
      const popsim::TensorLocationSettings shard =
          popsim::TensorLocationSettings().useReplicatedTensorSharding();
      EXPECT_TRUE(shard.replicatedTensorSharding());
      options.TensorLocations.setOptimizerLocation(shard).setWeightLocation(shard);
    }
    auto trainer = std::make_unique<popsim::TrainingSession>(load("mnist_training.pt"), inputs,
                                                             options, optimizer);
    for (int step = 0; step < 2; ++step)
      trainer->run(inputs);
    trainer->copyWeightsToHost();
    return trainer;
  };
  // (TensorFlow's RMSprop: a state that starts at ones, written shard by shard.)
  for (const popsim::Optimizer& optimizer :
       {popsim::Optimizer(popsim::optim::Adam(1e-3)),
        popsim::Optimizer(popsim::optim::RMSprop(1e-3).useTfVariant(true))}) {
    const auto whole = train(false, optimizer);
    const auto sharded = train(true, optimizer);
    std::map<std::string, at::Tensor> expected;
    for (const auto& parameter : whole->module().named_parameters(true))
      expected[parameter.name] = parameter.value;
    for (const auto& parameter : sharded->module().named_parameters(true)) {
      EXPECT_TRUE(torch::allclose(parameter.value, expected.at(parameter.name), 1e-5, 1e-7))
          << parameter.name;
    }
    // Half of each weight and of its state on each replica's IPUs.
    const popsim::MemoryReport wholeMemory = whole->memoryReport();
    const popsim::MemoryReport shardedMemory = sharded->memoryReport();
    for (const char* category : {"weights", "optimizer state"}) {
      EXPECT_LT(categoryBytes(shardedMemory.ipus[2], category),
                0.6 * categoryBytes(wholeMemory.ipus[2], category))
          << category;
    }
  }
  // Inference shards any parameter's weight, gathered where it is read: the same outputs.
  const at::Tensor images = reference("replicated_images");
  popsim::Options inference = pipelined();
  inference.replicationFactor(2);
  popsim::InferenceSession wholeInference(load("mnist_traced.pt"), {images}, inference);
  inference.TensorLocations.setWeightLocation(
      popsim::TensorLocationSettings().useReplicatedTensorSharding());
  popsim::InferenceSession shardedInference(load("mnist_traced.pt"), {images}, inference);
  EXPECT_TRUE(
      torch::equal(shardedInference.run({images}).at(0), wholeInference.run({images}).at(0)));
  EXPECT_LT(categoryBytes(shardedInference.memoryReport().ipus[0], "weights"),
            0.6 * categoryBytes(wholeInference.memoryReport().ipus[0], "weights"));
  EXPECT_EQ(messageOf<popsim::OptionError>([] {
              popsim::TensorLocationSettings().minElementsForReplicatedTensorSharding(-1);
            }),
            "TensorLocationSettings.minElementsForReplicatedTensorSharding expects a "
            "non-negative integer, got -1.");
}

// float16 gradient accumulators and optimizer state (PopTorch's accum_type and
// *_momentum_accum_type): Python's numbers, in half the memory.
TEST(PublicApi, Float16OptimizerStateTrainsAsPython) {
  const std::vector<at::Tensor> inputs = {reference("train_images"), reference("train_labels")};
  const popsim::Optimizer half = popsim::optim::Adam(1e-3)
                                     .accumType(at::kHalf)
                                     .firstOrderMomentumAccumType(at::kHalf)
                                     .secondOrderMomentumAccumType(at::kHalf);
  EXPECT_TRUE(half.halfAccumulators());
  EXPECT_EQ(half.halfStateKeys(),
            (std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
  popsim::TrainingSession trainer(load("mnist_training.pt"), inputs, trainingOptions(), half);
  EXPECT_TRUE(torch::equal(trainer.run(inputs).at(1).reshape({1}), reference("halfstate_loss")));
  trainer.copyWeightsToHost();
  for (const auto& parameter : trainer.module().named_parameters(true)) {
    std::string key = "halfstate_trained_" + parameter.name;
    std::replace(key.begin(), key.end(), '.', '_');
    EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << parameter.name;
  }
  popsim::TrainingSession whole(load("mnist_training.pt"), inputs, trainingOptions(),
                                popsim::optim::Adam(1e-3));
  whole.run(inputs);
  for (const char* category : {"optimizer state", "gradient accumulators"}) {
    EXPECT_LT(categoryBytes(trainer.memoryReport().ipus[2], category),
              0.6 * categoryBytes(whole.memoryReport().ipus[2], category))
        << category;
  }
  EXPECT_NE(messageOf<popsim::OptionError>([&] {
              trainer.setOptimizer(popsim::optim::Adam(1e-3));
            }).find("the state's dtypes"),
            std::string::npos);
  EXPECT_EQ(messageOf<popsim::OptionError>(
                [] { popsim::optim::SGD(0.1).velocityAccumType(at::kDouble); }),
            "popsim::optim::SGD::velocityAccumType(Double): popsim keeps optimizer state and "
            "accumulators in at::kFloat or at::kHalf.");
}

// A job sized without computing is Python's sizeJob of the same model and
// options, printout included; its inputs stand for every micro-batch of a call
// without being allocated.
TEST(PublicApi, SizeJobIsPythons) {
  popsim::Options options = trainingOptions();
  options.replicationFactor(2);
  const at::Tensor images = reference("train_images").narrow(0, 0, 4);
  const at::Tensor labels = reference("train_labels").narrow(0, 0, 4);
  const popsim::SizingReport report = popsim::sizeJob(
      load("mnist_training.pt"), {images, labels}, options, popsim::optim::SGD(0.05).momentum(0.9));
  const std::filesystem::path python = std::filesystem::path(fixtures()) / "python_profiles";
  EXPECT_EQ(report.text(), readFile(python / "mnist_training_size_job.txt"));
  EXPECT_TRUE(report.costOnly);
  EXPECT_EQ(report.replicas, 2);
  EXPECT_EQ(report.itemsPerCall, 2 * 2 * 8 * 4);
  EXPECT_EQ(messageOf<popsim::InputError>(
                [&] { popsim::sizeJob(load("mnist_traced.pt"), {images.sum()}, pipelined()); }),
            "sizeJob: input 0 (Tensor) is a scalar; every input of a micro-batch needs its batch "
            "dimension first, as the model's inputs are split along it.");
}

// Anchored tensors come back as Python's: an anchored gradient (the last
// micro-batch's), a weight after the call and the loss scaling factor; the
// names a session can anchor are Python's, and errors name the anchors.
TEST(PublicApi, AnchorsArePythons) {
  const std::vector<at::Tensor> inputs = {reference("train_images"), reference("train_labels")};
  popsim::Options options = trainingOptions();
  options.anchorTensor("grad", "Gradient___model.layer4.weight")
      .anchorTensor("bias", "UpdatedVar___model.layer1.conv.bias")
      .anchorTensor("scale", "finalLossScale");
  EXPECT_EQ(options.anchoredTensors(), (std::vector<std::string>{"grad", "bias", "scale"}));
  popsim::TrainingSession trainer(
      load("mnist_training.pt"), inputs, options,
      popsim::Optimizer(popsim::optim::SGD(0.05).momentum(0.9)).lossScaling(128.0));
  EXPECT_EQ(messageOf<popsim::OptionError>([&] { trainer.getAnchoredTensor("grad"); }),
            "No tensor with name grad found: the model has not run since it compiled. Anchor it "
            "with Options.anchorTensor(short_name, long_name) before compiling, then call the "
            "model.");
  const std::vector<at::Tensor> outputs = trainer.run(inputs);
  EXPECT_EQ(outputs.size(), 2u); // the anchored gradient is not among them
  EXPECT_TRUE(torch::equal(outputs.at(1).reshape({1}), reference("anchored_loss")));
  for (const char* name : {"grad", "bias", "scale"}) {
    EXPECT_TRUE(
        torch::equal(trainer.getAnchoredTensor(name), reference(std::string("anchored_") + name)))
        << name;
  }
  std::string names;
  for (const std::string& name : trainer.getTensorNames())
    names += (names.empty() ? "" : "\n") + name;
  EXPECT_EQ(names, readFile(std::filesystem::path(fixtures()) / "python_profiles" /
                            "mnist_tensor_names.txt"));
  EXPECT_EQ(messageOf<popsim::OptionError>([&] { trainer.getAnchoredTensor("gard"); }),
            "No tensor with name gard found: the options anchor ['bias', 'grad', 'scale']. Anchor "
            "it with Options.anchorTensor(short_name, long_name) before compiling, then call the "
            "model.");
  popsim::Options misspelt = trainingOptions();
  misspelt.anchorTensor("grad", "Gradient___model.layer4.wieght");
  try {
    popsim::TrainingSession(load("mnist_training.pt"), inputs, misspelt);
    ADD_FAILURE() << "a misspelt anchor compiled";
  } catch (const popsim::OptionError& error) {
    EXPECT_EQ(std::string(error.what()),
              "anchorTensor: 'Gradient___model.layer4.wieght' is not the gradient of a parameter "
              "the optimizer trains. Did you mean 'Gradient___model.layer4.weight'? "
              "getTensorNames() lists the names a compiled model can anchor.");
    EXPECT_EQ(error.site().option, "anchorTensor");
  }
  popsim::Options inference = pipelined();
  inference.anchorTensor("g", "Gradient___layer4.weight");
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              popsim::InferenceSession(load("mnist_traced.pt"), {reference("images")}, inference);
            }),
            "anchorTensor: 'Gradient___layer4.weight' is a gradient, and an inference model "
            "computes none. Anchor it on a trainingModel.");
}

// Loss scaling trains as Python's (a constant factor, compiled in), and
// automatic loss scaling refuses float32 gradients with Python's message.
TEST(PublicApi, LossScalingTrainsAsPython) {
  const std::vector<at::Tensor> inputs = {reference("train_images"), reference("train_labels")};
  popsim::TrainingSession trainer(
      load("mnist_training.pt"), inputs, trainingOptions(),
      popsim::Optimizer(popsim::optim::SGD(0.05).momentum(0.9)).lossScaling(128.0));
  const std::vector<at::Tensor> outputs = trainer.run(inputs);
  EXPECT_TRUE(torch::equal(outputs.at(1).reshape({1}), reference("scaled_loss")));
  trainer.copyWeightsToHost();
  for (const auto& parameter : trainer.module().named_parameters(true)) {
    std::string key = "scaled_trained_" + parameter.name;
    std::replace(key.begin(), key.end(), '.', '_');
    EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << parameter.name;
  }
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              trainer.setOptimizer(
                  popsim::Optimizer(popsim::optim::SGD(0.05).momentum(0.9)).lossScaling(64.0));
            }).rfind("setOptimizer can change numeric hyper-parameters", 0),
            0u);
  // Kept in device state, the loss scaling changes between calls, as Python's.
  const auto variable = [](double factor) {
    return popsim::Optimizer(popsim::optim::SGD(0.05).momentum(0.9))
        .lossScaling(factor)
        .variableLossScaling();
  };
  EXPECT_TRUE(variable(1.0).lossScalingIsVariable());
  popsim::Options anchored = trainingOptions();
  anchored.anchorTensor("scale", "finalLossScale");
  popsim::TrainingSession rescaled(load("mnist_training.pt"), inputs, anchored, variable(128.0));
  rescaled.run(inputs);
  EXPECT_EQ(rescaled.getAnchoredTensor("scale").item<float>(), 128.0f);
  rescaled.setOptimizer(variable(64.0));
  EXPECT_TRUE(torch::equal(rescaled.run(inputs).at(1).reshape({1}), reference("rescaled_loss")));
  EXPECT_EQ(rescaled.getAnchoredTensor("scale").item<float>(), 64.0f); // the device's factor
  rescaled.copyWeightsToHost();
  for (const auto& parameter : rescaled.module().named_parameters(true)) {
    std::string key = "rescaled_trained_" + parameter.name;
    std::replace(key.begin(), key.end(), '.', '_');
    EXPECT_TRUE(torch::equal(parameter.value, reference(key))) << parameter.name;
  }
  EXPECT_EQ(messageOf<popsim::OptionError>([&] {
              rescaled.setOptimizer(variable(64.0).variableLossScaling(false));
            }).rfind("setOptimizer can change numeric hyper-parameters", 0),
            0u);
  EXPECT_EQ(messageOf<popsim::OptionError>(
                [] { popsim::Optimizer(popsim::optim::SGD(0.1)).lossScaling(0.0); }),
            "Optimizer::lossScaling expects a positive factor (1 for none), got 0.");
  popsim::Options automatic = trainingOptions();
  automatic.Training.setAutomaticLossScaling(true);
  EXPECT_TRUE(automatic.Training.automaticLossScaling());
  // A float32 module has no float16 gradients to count: it trains, its loss scaling kept.
  popsim::TrainingSession adaptive(load("mnist_training.pt"), inputs, automatic);
  EXPECT_TRUE(torch::isfinite(adaptive.run(inputs).back()).all().item<bool>());
}

// The execution trace and PopTorch's performance counters of a call are
// Python's for the same model and options, timeline printout included.
TEST(PublicApi, ExecutionTraceAndCountersArePythons) {
  const at::Tensor images = reference("images");
  popsim::InferenceSession session(load("mnist_traced.pt"), {images}, pipelined());
  EXPECT_TRUE(session.executionTrace().events.empty()); // no call yet
  session.run({images});
  const popsim::ExecutionTrace trace = session.executionTrace();
  const std::filesystem::path python = std::filesystem::path(fixtures()) / "python_profiles";
  EXPECT_EQ(trace.render(), readFile(python / "mnist_trace.txt"));
  std::ostringstream printed;
  printed << trace;
  EXPECT_EQ(printed.str(), trace.render());
  EXPECT_EQ(trace.totalCycles, session.cycleCount());
  EXPECT_EQ(trace.numIpus(), 4);
  EXPECT_EQ(trace.microBatchCycles().size(), 4u);
  for (int64_t ipu = 0; ipu < 4; ++ipu) {
    EXPECT_GT(trace.utilisation(ipu), 0.0);
    EXPECT_LE(trace.busyCycles(ipu), trace.totalCycles);
  }
  const nlohmann::json expected = nlohmann::json::parse(readFile(python / "mnist_counters.json"));
  const popsim::PerfCounters counters = session.perfCounters();
  EXPECT_EQ(nlohmann::json(counters.input), expected["input"]);
  EXPECT_EQ(nlohmann::json(counters.inputComplete), expected["input_complete"]);
  EXPECT_EQ(nlohmann::json(counters.output), expected["output"]);
  EXPECT_EQ(nlohmann::json(counters.outputComplete), expected["output_complete"]);
  const auto same = [](const popsim::Latency& latency, const nlohmann::json& python) {
    return nlohmann::json({latency.min, latency.max, latency.mean}) == python;
  };
  EXPECT_TRUE(same(counters.roundTripLatency(), expected["latency"]));
  EXPECT_TRUE(same(counters.hostIpuLatency(), expected["host_ipu_latency"]));
  EXPECT_TRUE(same(counters.computeLatency(), expected["compute_latency"]));
  EXPECT_TRUE(same(counters.ipuHostLatency(), expected["ipu_host_latency"]));
  EXPECT_EQ(counters.input.size(), 1u);    // one input
  EXPECT_EQ(counters.input[0].size(), 8u); // a transfer per device iteration
}

// Ops are named after the module path they run in, as Python's tracing names
// them (the profile's op events show the names), unless
// disableModuleNamescope() says otherwise.
TEST(PublicApi, OpsAreNamedByModulePathAsInPython) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("popsim_api_names_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  const at::Tensor images = reference("images");
  const auto opNames = [&](popsim::Options options) {
    options.enableProfiling(root.string());
    popsim::InferenceSession session(load("mnist_traced.pt"), {images}, options);
    session.run({images});
    std::vector<std::string> names;
    const Json trace =
        Json::parse(readFile(std::filesystem::path(session.profileDirectory()) / "trace.json"));
    for (const Json& event : trace["traceEvents"]) {
      if (event.value("cat", "") == "op") names.push_back(event["name"].get<std::string>());
    }
    return names;
  };
  const std::vector<std::string> named = opNames(pipelined());
  EXPECT_NE(std::find(named.begin(), named.end(), "layer1/conv/convolution"), named.end());
  popsim::Options unscoped = pipelined();
  unscoped.disableModuleNamescope();
  const std::vector<std::string> plain = opNames(unscoped);
  EXPECT_NE(std::find(plain.begin(), plain.end(), "convolution"), plain.end());
  EXPECT_EQ(named.size(), plain.size());
  std::filesystem::remove_all(root);
}

// Tiles set aside for I/O have memory of their own, which the report gives
// and fits() checks, as in Python.
TEST(PublicApi, TheMemoryReportHasTheIoTiles) {
  popsim::Options options;
  options.deviceIterations(8).setExecutionStrategy(popsim::ShardedExecution(kFourIpus));
  options.TensorLocations.numIOTiles(32);
  popsim::InferenceSession session(load("mnist_traced.pt"), {reference("images")}, options);
  for (const popsim::IpuMemory& ipu : session.memoryReport().ipus) {
    EXPECT_GT(ipu.ioTileCapacity, 0u) << "IPU " << ipu.ipu;
    EXPECT_TRUE(ipu.fits()) << "IPU " << ipu.ipu;
  }
  popsim::IpuMemory overfull = session.memoryReport().ipus[0];
  overfull.ioTileBytes = overfull.ioTileCapacity + 1;
  EXPECT_FALSE(overfull.fits());
}

// The executable cache is Python's (one format and set of checks in the host
// layer): a second session loads the program the first one cached, and a
// damaged entry is compiled again and replaced, with a warning.
TEST(PublicApi, ExecutableCachingIsPythons) {
  namespace fs = std::filesystem;
  const fs::path cache =
      fs::temp_directory_path() / ("popsim_api_cache_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const at::Tensor images = reference("images");
  popsim::Options options = pipelined();
  options.enableExecutableCaching(cache.string());
  EXPECT_EQ(options.executableCacheDirectory(), cache.string());
  const auto entry = [&] {
    std::vector<fs::path> files(fs::directory_iterator(cache), fs::directory_iterator{});
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? fs::path() : files.front();
  };
  const auto inode = [](const fs::path& path) {
    struct stat status {};
    EXPECT_EQ(::stat(path.c_str(), &status), 0) << path;
    return status.st_ino;
  };
  popsim::InferenceSession first(load("mnist_traced.pt"), {images}, options);
  const at::Tensor expected = first.run({images}).at(0);
  EXPECT_TRUE(torch::equal(expected, reference("pipelined_outputs")));
  const fs::path file = entry();
  EXPECT_EQ(fs::status(cache).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const auto written = inode(file);

  // Loaded, not compiled: the entry is not written again, and the run is the same.
  testing::internal::CaptureStderr();
  popsim::InferenceSession second(load("mnist_traced.pt"), {images}, options);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(torch::equal(second.run({images}).at(0), expected));
  EXPECT_EQ(second.cycleCount(), first.cycleCount());
  EXPECT_EQ(inode(entry()), written);

  // A damaged entry is a miss: compiled again, replaced, and said so.
  {
    std::fstream damage(file, std::ios::in | std::ios::out | std::ios::binary);
    damage.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
    damage.put('\x5a');
  }
  testing::internal::CaptureStderr();
  popsim::InferenceSession third(load("mnist_traced.pt"), {images}, options);
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("popsim's executable cache does not use a file: '" + file.string() +
                        "' is damaged: its SHA-256 does not match its contents"),
            std::string::npos)
      << warned;
  EXPECT_NE(warned.find("Compiling the model again and replacing the file."), std::string::npos);
  EXPECT_TRUE(torch::equal(third.run({images}).at(0), expected));
  EXPECT_NE(inode(entry()), written);

  // Other options, another program: a second entry.
  popsim::Options other = pipelined();
  other.deviceIterations(4).enableExecutableCaching(cache.string());
  popsim::InferenceSession fourth(load("mnist_traced.pt"), {images}, other);
  EXPECT_EQ(std::distance(fs::directory_iterator(cache), fs::directory_iterator{}), 2);

  // Off, whatever the environment says; the environment names it otherwise.
  const fs::path fromEnvironment = cache / "environment";
  ::setenv("POPSIM_CACHE_DIR", fromEnvironment.c_str(), 1);
  EXPECT_EQ(popsim::Options().executableCacheDirectory(), fromEnvironment.string());
  EXPECT_EQ(popsim::Options().disableExecutableCaching().executableCacheDirectory(), "");
  popsim::InferenceSession fifth(load("mnist_traced.pt"), {images}, pipelined());
  EXPECT_EQ(std::distance(fs::directory_iterator(fromEnvironment), fs::directory_iterator{}), 1);
  ::unsetenv("POPSIM_CACHE_DIR");
  EXPECT_EQ(messageOf<popsim::OptionError>([] { popsim::Options().enableExecutableCaching(""); }),
            "enableExecutableCaching expects a directory path (a non-empty string), got ''. Call "
            "disableExecutableCaching() to turn caching off.");
  fs::remove_all(cache);
}

TEST(PublicApi, VersionIsThePackages) {
  EXPECT_STREQ(popsim::version(), POPSIM_VERSION_STRING);
  EXPECT_EQ(POPSIM_VERSION_MAJOR, 0);
}

} // namespace
