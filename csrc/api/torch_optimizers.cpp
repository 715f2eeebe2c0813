// LibTorch's optimizers as popsim's (optimizerOf): a TrainingSession takes a
// torch::optim optimizer, and setOptimizer its options after a scheduler's
// step, so C++ programs keep their torch::optim code.
#include "popsim/session.h"

#include "api/error_classes.h"
#include "common/strings.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <tuple>

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

// What differs between two groups' optimizers, as "lr 0.1 and 0.01"; empty
// when nothing does.
std::string difference(const Optimizer& first, const Optimizer& other) {
  if (first.kind() != other.kind()) return "the optimizer";
  for (const auto& [name, value] : first.hyperparameters()) {
    const double second = other.hyperparameters().at(name);
    if (value != second) return strCat(name, " ", value, " and ", second);
  }
  const auto flags = [](const Optimizer& o) {
    return std::make_tuple(o.momentum(), o.nesterov(), o.amsgrad(), o.centered());
  };
  return flags(first) == flags(other) ? "" : "momentum, nesterov, amsgrad or centered";
}

} // namespace

Optimizer optimizerOf(const torch::optim::Optimizer& optimizer) {
  return api::withErrorClasses([&] {
    const auto& groups = optimizer.param_groups();
    if (groups.empty()) {
      api::refuseOption("optimizer", "The torch::optim optimizer has no parameter groups.");
    }
    std::optional<Optimizer> first;
    for (size_t index = 0; index < groups.size(); ++index) {
      std::optional<Optimizer> group = groupOptimizer(groups[index].options());
      if (!group) {
        api::refuseOption("optimizer",
                          "popsim's sessions run torch::optim::SGD, Adam, AdamW and RMSprop (and "
                          "popsim::optim::LAMB); this torch::optim optimizer is none of them.");
      }
      if (!first) {
        first = group;
        continue;
      }
      const std::string differs = difference(*first, *group);
      if (!differs.empty()) {
        api::refuseOption(
            "optimizer", strCat("The torch::optim optimizer's parameter groups 0 and ", index,
                                " differ in ", differs,
                                "; a C++ session trains its parameters as one group. Give them the "
                                "same options, or use Python's popsim.trainingModel, which takes "
                                "parameter groups."));
      }
    }
    return *first;
  });
}

} // namespace popsim
