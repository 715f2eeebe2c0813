// LibTorch's optimizers as popsim's (optimizerOf): a TrainingSession takes a
// torch::optim optimizer, and setOptimizer its options after a scheduler's
// step, so C++ programs keep their torch::optim code.
#include "popsim/session.h"

#include "api/error_classes.h"
#include "api/optimizer_groups.h"
#include "common/strings.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <map>
#include <set>

namespace popsim {
namespace {

// Adam's or AdamW's options (torch::optim gives both the same names) as
// popsim's `Popsim` optimizer.
template <typename Popsim, typename Options> Optimizer adamFamily(const Options& options) {
  const auto [beta1, beta2] = options.betas();
  return Optimizer(Popsim(options.lr())
                       .betas(beta1, beta2)
                       .eps(options.eps())
                       .weightDecay(options.weight_decay())
                       .amsgrad(options.amsgrad()));
}

// One parameter group's options as popsim's optimizer; nullopt for an
// optimizer popsim does not run.
std::optional<Optimizer> groupOptimizer(const torch::optim::OptimizerOptions& options) {
  if (const auto* sgd = dynamic_cast<const torch::optim::SGDOptions*>(&options)) {
    return Optimizer(optim::SGD(sgd->lr())
                         .momentum(sgd->momentum())
                         .dampening(sgd->dampening())
                         .weightDecay(sgd->weight_decay())
                         .nesterov(sgd->nesterov()));
  }
  if (const auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&options)) {
    return adamFamily<optim::Adam>(*adam);
  }
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWOptions*>(&options)) {
    return adamFamily<optim::AdamW>(*adamw);
  }
  if (const auto* rmsprop = dynamic_cast<const torch::optim::RMSpropOptions*>(&options)) {
    return Optimizer(optim::RMSprop(rmsprop->lr())
                         .alpha(rmsprop->alpha())
                         .eps(rmsprop->eps())
                         .weightDecay(rmsprop->weight_decay())
                         .momentum(rmsprop->momentum())
                         .centered(rmsprop->centered()));
  }
  return std::nullopt;
}

// One group's options as popsim's optimizer; an OptionError for an optimizer
// popsim does not run.
Optimizer runnableGroupOptimizer(const torch::optim::OptimizerOptions& options) {
  std::optional<Optimizer> optimizer = groupOptimizer(options);
  if (!optimizer) {
    api::refuseOption("optimizer",
                      "popsim's sessions run torch::optim::SGD, Adam, AdamW and RMSprop (and "
                      "popsim::optim::LAMB); this torch::optim optimizer is none of them.");
  }
  return *optimizer;
}

// What differs between two groups' optimizers, as "lr 0.1 and 0.01"; empty
// when nothing does.
std::string difference(const Optimizer& first, const Optimizer& other) {
  if (first.kind() != other.kind()) return "the optimizer";
  for (const auto& [name, value] : first.hyperparameters()) {
    const double second = other.hyperparameters().at(name);
    if (value != second) return strCat(name, " ", value, " and ", second);
  }
  return api::stateSettingsOf(first) == api::stateSettingsOf(other) ? "" : api::kStateSettingsNames;
}

} // namespace

Optimizer optimizerOf(const torch::optim::Optimizer& optimizer) {
  return api::withErrorClasses([&] {
    const auto& groups = optimizer.param_groups();
    if (groups.empty()) {
      api::refuseOption("optimizer", "The torch::optim optimizer has no parameter groups.");
    }
    const Optimizer first = runnableGroupOptimizer(groups.front().options());
    for (size_t index = 1; index < groups.size(); ++index) {
      const std::string differs =
          difference(first, runnableGroupOptimizer(groups[index].options()));
      if (!differs.empty()) {
        api::refuseOption("optimizer",
                          strCat("The torch::optim optimizer's parameter groups 0 and ", index,
                                 " differ in ", differs,
                                 "; one popsim optimizer has one set of options. Pass the "
                                 "torch::optim optimizer to the TrainingSession instead, which "
                                 "trains each group with its own."));
      }
    }
    return first;
  });
}

} // namespace popsim

namespace popsim::api {

std::vector<OptimizerGroup> optimizerGroupsOf(const torch::jit::Module& module,
                                              const torch::optim::Optimizer& optimizer) {
  // The module's parameters the session trains, and the frozen ones, which a torch::optim
  // step skips too.
  const TrainedParameters parameters = trainedParametersOf(module);
  const std::map<const c10::TensorImpl*, std::string>& trained = parameters.nameOf;
  const std::set<const c10::TensorImpl*>& frozen = parameters.frozen;
  std::vector<OptimizerGroup> groups;
  std::set<const c10::TensorImpl*> placed;
  size_t foreign = 0; // tensors that are no parameter of the module
  const auto& torchGroups = optimizer.param_groups();
  for (size_t index = 0; index < torchGroups.size(); ++index) {
    OptimizerGroup group{runnableGroupOptimizer(torchGroups[index].options()), {}};
    if (!groups.empty() && group.optimizer.kind() != groups.front().optimizer.kind()) {
      refuseOption("optimizer", strCat("The torch::optim optimizer's parameter group ", index,
                                       " is another optimizer than the first group's; a "
                                       "session trains with one optimizer."));
    }
    for (const at::Tensor& parameter : torchGroups[index].params()) {
      const c10::TensorImpl* tensor = parameter.unsafeGetTensorImpl();
      const auto found = trained.find(tensor);
      if (found == trained.end()) {
        foreign += frozen.count(tensor) == 0 ? 1 : 0;
      } else if (placed.insert(tensor).second) {
        group.parameters.push_back(found->second);
      }
    }
    if (!group.parameters.empty()) groups.push_back(std::move(group));
  }
  // The session trains every parameter of the module that requires a gradient: an
  // optimizer over other tensors would train something else.
  std::set<std::string> placedNames;
  for (const c10::TensorImpl* tensor : placed)
    placedNames.insert(trained.at(tensor));
  std::vector<std::string> missing;
  for (const std::string& name : parameters.names)
    if (placedNames.count(name) == 0) missing.push_back(name);
  if (!missing.empty() || foreign != 0) {
    refuseOption("optimizer",
                 strCat("The torch::optim optimizer's parameters are not the module's ",
                        trained.size(),
                        " parameters that require a gradient, which the session trains: ",
                        missing.empty() ? strCat(foreign, " of its tensors are not the module's")
                                        : strCat("it leaves out ", join(missing, ", ")),
                        ". Build it over module.parameters(), and freeze a parameter with "
                        "requires_grad(false) before building the session."));
  }
  return groups;
}

TrainedParameters trainedParametersOf(const torch::jit::Module& module) {
  TrainedParameters parameters;
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    const c10::TensorImpl* tensor = parameter.value.unsafeGetTensorImpl();
    if (!parameter.value.requires_grad()) {
      parameters.frozen.insert(tensor);
    } else if (parameters.nameOf.emplace(tensor, parameter.name).second) {
      parameters.names.push_back(parameter.name);
    }
  }
  if (parameters.names.empty()) {
    refuseOption("optimizer", "The module has no parameter that requires a gradient, so a "
                              "training session has nothing to train.");
  }
  return parameters;
}

} // namespace popsim::api
