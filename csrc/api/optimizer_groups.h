#pragma once

#include "popsim/optim.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/optim/optimizer.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace popsim::api {

// One parameter group a training session trains: its optimizer (numeric
// hyper-parameters and the flags that decide its state) and its parameters,
// by module path.
struct OptimizerGroup {
  Optimizer optimizer;
  std::vector<std::string> parameters;
};

// The settings of an optimizer that are compiled into a training program
// because they decide which optimizer state exists and which update runs (not
// its numeric hyper-parameters, which are device state). Sessions compare them
// to tell whether setOptimizer may keep the program, and the groups of a
// torch::optim optimizer folded into one popsim optimizer must agree on them.
inline auto stateSettingsOf(const Optimizer& optimizer) {
  return std::make_tuple(optimizer.kind(), optimizer.momentum(), optimizer.nesterov(),
                         optimizer.amsgrad(), optimizer.centered(), optimizer.tfVariant(),
                         optimizer.biasCorrection(), optimizer.halfAccumulators(),
                         optimizer.halfStateKeys());
}
inline constexpr const char* kStateSettingsNames =
    "momentum on or off, nesterov, amsgrad, centered, the TensorFlow variant, bias correction "
    "or the state's dtypes";

// The parameters of `module` a training session trains, those that require a
// gradient, each by its first name (a tied weight is one tensor under two
// names), in the module's order, and the frozen ones. OptionError when no
// parameter requires a gradient.
struct TrainedParameters {
  std::vector<std::string> names;
  std::map<const c10::TensorImpl*, std::string> nameOf;
  std::set<const c10::TensorImpl*> frozen;
};
TrainedParameters trainedParametersOf(const torch::jit::Module& module);

// The groups of a torch::optim optimizer (SGD, Adam, AdamW or RMSprop) over
// `module`: each group's options as popsim's optimizer, and the module's
// parameters it holds that require a gradient (a tied weight once; a group
// of frozen parameters only is left out, as a torch::optim step skips them).
// OptionError for another optimizer, groups of different optimizers, or
// parameters that are not exactly the module's that require a gradient.
std::vector<OptimizerGroup> optimizerGroupsOf(const torch::jit::Module& module,
                                              const torch::optim::Optimizer& optimizer);

} // namespace popsim::api
