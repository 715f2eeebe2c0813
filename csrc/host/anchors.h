#pragma once

// Anchored tensors (PopTorch's Options.anchorTensor): tensors a model does
// not output that a call returns too, by long name:
// - "Gradient___<parameter>": a trained parameter's gradient of each
//   micro-batch, before accumulation; the training program outputs it after
//   the model's outputs (TrainingConfig::anchoredGradients), so it comes back
//   in the model's output mode;
// - "UpdatedVar___<name>" or "<name>" (a parameter or buffer): its value
//   after the call, read from the device;
// - "finalLossScale" (PopART's name): the loss scaling factor after the
//   call, a 0-d float32 (the state ir::kLossScalingName, or the optimizer's
//   constant);
// - the optimizer's state and compound hyper-parameters by PopTorch's (PopART's)
//   names ("Accl1___model.fc.bias", "scaledLearningRate0___specific___model.fc.bias"):
//   their values after the call. The caller names them (`optimizerState`):
//   the Python frontend knows PopTorch's names of each optimizer's state.
// Both languages plan them here, with the same checks and messages.

#include "host/session_options.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace popsim::host {

inline constexpr const char* kGradientAnchorPrefix = "Gradient___";
inline constexpr const char* kUpdatedAnchorPrefix = "UpdatedVar___";
inline constexpr const char* kLossScaleAnchor = "finalLossScale";
// How PopTorch names a parameter: inside the module it wraps the user's model
// in, this prefix and the model's own path ("model.fc.bias"), in its tensor
// names and optimizer state.
inline constexpr const char* kPopTorchParameterPrefix = "model.";

struct AnchorPlan {
  // (short name, parameter), in the order the program outputs them.
  std::vector<std::pair<std::string, std::string>> gradients;
  // (short name, variable), read after a call; the loss scaling factor is
  // ir::kLossScalingName.
  std::vector<std::pair<std::string, std::string>> variables;
  // (short name, PopTorch's name of an optimizer state or hyper-parameter),
  // read after a call.
  std::vector<std::pair<std::string, std::string>> optimizerState;
};

// What each of `options`' anchors is, checked against the model: `trained`
// names the parameters the optimizer trains, `weights` every parameter and
// buffer, `optimizerState` the optimizer's state by PopTorch's names (none
// where the caller does not know them). Throws an OptionError naming
// anchorTensor (and, for a name that is not the model's, the closest one
// that is).
AnchorPlan planAnchors(const SessionOptions& options, bool training,
                       const std::vector<std::string>& trained,
                       const std::vector<std::string>& weights,
                       const std::vector<std::string>& optimizerState = {});

// The long names a compiled model can anchor (getTensorNames): every
// variable the program uses (`used`, in its order), and for training their
// "UpdatedVar___" names, each trained parameter's gradient, "finalLossScale"
// and `optimizerState`.
std::vector<std::string> anchorableNames(const std::vector<std::string>& used, bool training,
                                         const std::vector<std::string>& trained,
                                         const std::vector<std::string>& optimizerState = {});

// Throws Python's OptionError for an anchored variable the program does not
// use: `variables` holds each (short name, the model's name, the program's
// name for it), `held` the program's weights.
void checkAnchoredVariablesHeld(
    const std::vector<std::tuple<std::string, std::string, std::string>>& variables,
    const std::vector<std::string>& held);

// getAnchoredTensor(shortName) has no value: the OptionError both languages
// raise, for a name `options` do not anchor or a session not yet run.
[[noreturn]] void refuseMissingAnchor(const SessionOptions& options, const std::string& shortName);

// The candidate most like `word` if one is alike enough, else "": Python's
// difflib.get_close_matches(word, candidates, n=1) (similarity ratio of at
// least 0.6, ties to the greater string), so both languages suggest the
// same name.
std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates);

} // namespace popsim::host
