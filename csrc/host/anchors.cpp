#include "host/anchors.h"

#include "common/error.h"
#include "common/strings.h"
#include "ir/state_names.h"

#include <algorithm>
#include <array>
#include <map>

namespace popsim::host {
namespace {

// Code points of UTF-8 text, as Python's strings compare.
std::u32string codePoints(const std::string& text) {
  std::u32string points;
  for (size_t at = 0; at < text.size();) {
    const auto byte = static_cast<unsigned char>(text[at]);
    const int length = byte < 0x80 ? 1 : byte >> 5 == 0x6 ? 2 : byte >> 4 == 0xE ? 3 : 4;
    char32_t point = length == 1 ? byte : byte & (0x7F >> length);
    for (int k = 1; k < length && at + k < text.size(); ++k) {
      point = (point << 6) | (static_cast<unsigned char>(text[at + k]) & 0x3F);
    }
    points.push_back(point);
    at += static_cast<size_t>(length);
  }
  return points;
}

// difflib.SequenceMatcher(None, a, b) without junk, as far as ratio() goes:
// the sizes of its matching blocks, found as it finds them (the longest match
// first, the earliest in `a` and then in `b` among equal ones, then the same
// on each side), with its "popular" heuristic for a `b` of 200 or more.
class SequenceMatcher {
public:
  SequenceMatcher(std::u32string a, const std::u32string& b) : a_(std::move(a)), b_(b) {
    for (size_t j = 0; j < b_.size(); ++j)
      b2j_[b_[j]].push_back(j);
    if (b_.size() >= 200) { // autojunk: elements in more than 1% of b
      const size_t most = b_.size() / 100 + 1;
      for (auto it = b2j_.begin(); it != b2j_.end();) {
        it = it->second.size() > most ? b2j_.erase(it) : std::next(it);
      }
    }
  }

  double ratio() const {
    size_t matches = 0;
    std::vector<std::array<size_t, 4>> queue = {{0, a_.size(), 0, b_.size()}};
    while (!queue.empty()) {
      const auto [alo, ahi, blo, bhi] = queue.back();
      queue.pop_back();
      const auto [i, j, k] = longestMatch(alo, ahi, blo, bhi);
      if (k == 0) continue;
      matches += k;
      if (alo < i && blo < j) queue.push_back({alo, i, blo, j});
      if (i + k < ahi && j + k < bhi) queue.push_back({i + k, ahi, j + k, bhi});
    }
    const size_t length = a_.size() + b_.size();
    return length == 0 ? 1.0 : 2.0 * static_cast<double>(matches) / static_cast<double>(length);
  }

private:
  std::array<size_t, 3> longestMatch(size_t alo, size_t ahi, size_t blo, size_t bhi) const {
    size_t besti = alo, bestj = blo, bestsize = 0;
    std::map<size_t, size_t> lengths; // match length ending at b[j], for the previous a[i]
    for (size_t i = alo; i < ahi; ++i) {
      std::map<size_t, size_t> next;
      const auto found = b2j_.find(a_[i]);
      if (found != b2j_.end()) {
        for (const size_t j : found->second) {
          if (j < blo) continue;
          if (j >= bhi) break;
          const auto previous = j > 0 ? lengths.find(j - 1) : lengths.end();
          const size_t k = next[j] = (previous != lengths.end() ? previous->second : 0) + 1;
          if (k > bestsize) {
            besti = i + 1 - k;
            bestj = j + 1 - k;
            bestsize = k;
          }
        }
      }
      lengths = std::move(next);
    }
    // Popular elements are not in b2j_: a match extends over them.
    while (besti > alo && bestj > blo && a_[besti - 1] == b_[bestj - 1]) {
      --besti;
      --bestj;
      ++bestsize;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi &&
           a_[besti + bestsize] == b_[bestj + bestsize]) {
      ++bestsize;
    }
    return {besti, bestj, bestsize};
  }

  std::u32string a_;
  const std::u32string& b_;
  std::map<char32_t, std::vector<size_t>> b2j_;
};

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

[[noreturn]] void refuse(const std::string& message) { throwOptionError("anchorTensor", message); }

[[noreturn]] void refuseUnknown(const std::string& longName, const std::vector<std::string>& known,
                                const std::string& what) {
  const std::string close = closestMatch(longName, known);
  refuse(strCat("anchorTensor: '", longName, "' is not ", what, ".",
                close.empty() ? "" : " Did you mean '" + close + "'?",
                " getTensorNames() lists the names a compiled model can anchor."));
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The name of `known`'s parameter that `name` gives, in popsim's spelling or
// PopTorch's (kPopTorchParameterPrefix first: "Gradient___model.fc.bias").
std::string ownName(const std::string& name, const std::vector<std::string>& known) {
  const std::string prefix = kPopTorchParameterPrefix;
  if (contains(known, name) || !startsWith(name, prefix)) return name;
  const std::string inner = name.substr(prefix.size());
  return contains(known, inner) ? inner : name;
}

} // namespace

std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates) {
  const std::u32string b = codePoints(word);
  std::string best;
  double bestRatio = -1.0;
  for (const std::string& candidate : candidates) {
    const double ratio = SequenceMatcher(codePoints(candidate), b).ratio();
    if (ratio < 0.6) continue;
    if (ratio > bestRatio || (ratio == bestRatio && candidate > best)) {
      best = candidate;
      bestRatio = ratio;
    }
  }
  return best;
}

AnchorPlan planAnchors(const SessionOptions& options, bool training,
                       const std::vector<std::string>& trained,
                       const std::vector<std::string>& weights,
                       const std::vector<std::string>& optimizerState) {
  const OutputMode outputMode = options.resolvedOutputMode(training);
  const int64_t steps = options.deviceIterations;
  AnchorPlan plan;
  for (const Anchor& anchor : options.anchors) {
    const std::string& shortName = anchor.shortName;
    const std::string& longName = anchor.longName;
    if (anchor.mode.has_value() &&
        (*anchor.mode != outputMode || anchor.period != options.outputReturnPeriod)) {
      refuse(strCat("anchorTensor('", shortName, "', '", longName, "', OutputMode.",
                    outputModeName(*anchor.mode),
                    "): popsim returns anchors in the model's output mode (OutputMode.",
                    outputModeName(outputMode),
                    "). Pass output_mode=None, or set the model's outputMode(OutputMode.",
                    outputModeName(*anchor.mode), ")."));
    }
    if (startsWith(longName, kGradientAnchorPrefix)) {
      const std::string name =
          ownName(longName.substr(std::string(kGradientAnchorPrefix).size()), trained);
      if (!training) {
        refuse(strCat("anchorTensor: '", longName,
                      "' is a gradient, and an inference model computes none. Anchor it on a "
                      "trainingModel."));
      }
      if (!contains(trained, name)) {
        std::vector<std::string> known;
        for (const std::string& parameter : trained)
          known.push_back(kGradientAnchorPrefix + parameter);
        refuseUnknown(longName, known, "the gradient of a parameter the optimizer trains");
      }
      plan.gradients.emplace_back(shortName, name);
      continue;
    }
    const bool optimizerValue = training && contains(optimizerState, longName);
    std::string name = ownName(startsWith(longName, kUpdatedAnchorPrefix)
                                   ? longName.substr(std::string(kUpdatedAnchorPrefix).size())
                                   : longName,
                               weights);
    if (longName == kLossScaleAnchor) {
      if (!training) {
        refuse(strCat("anchorTensor('", shortName, "', '", kLossScaleAnchor,
                      "'): the loss scaling factor belongs to training; an inference model has "
                      "none."));
      }
      name = ir::kLossScalingName;
    } else if (!optimizerValue && !contains(weights, name)) {
      std::vector<std::string> known = weights;
      for (const std::string& weight : weights)
        known.push_back(kUpdatedAnchorPrefix + weight);
      if (training) known.insert(known.end(), optimizerState.begin(), optimizerState.end());
      refuseUnknown(longName, known,
                    training && !optimizerState.empty()
                        ? "a parameter or buffer of the model, or its optimizer's state"
                        : "a parameter or buffer of the model");
    }
    if (outputMode != OutputMode::Final && steps > 1 && training) {
      refuse(strCat("anchorTensor('", shortName, "', '", longName,
                    "'): popsim returns a variable's value after the call, not after each of its ",
                    steps, " steps (OutputMode.", outputModeName(outputMode),
                    "). Use outputMode(OutputMode.Final), or one device iteration."));
    }
    if (optimizerValue) {
      plan.optimizerState.emplace_back(shortName, longName);
      continue;
    }
    plan.variables.emplace_back(shortName, name);
  }
  return plan;
}

void checkAnchoredVariablesHeld(
    const std::vector<std::tuple<std::string, std::string, std::string>>& variables,
    const std::vector<std::string>& held) {
  for (const auto& [shortName, name, programName] : variables) {
    if (programName == ir::kLossScalingName || contains(held, programName)) continue;
    refuse(strCat("anchorTensor('", shortName, "', ...): the program does not use '", name,
                  "', so the device does not hold it; read it from the model instead."));
  }
}

void refuseMissingAnchor(const SessionOptions& options, const std::string& shortName) {
  std::vector<std::string> names;
  for (const Anchor& anchor : options.anchors)
    names.push_back(anchor.shortName);
  std::sort(names.begin(), names.end());
  std::string reason = "the model has not run since it compiled";
  if (!contains(names, shortName)) {
    std::vector<std::string> quoted; // as Python prints a list of str
    for (const std::string& name : names) {
      const bool single =
          name.find('\'') != std::string::npos && name.find('"') == std::string::npos;
      quoted.push_back(single ? "\"" + name + "\"" : "'" + name + "'");
    }
    reason = "the options anchor [" + join(quoted, ", ") + "]";
  }
  refuse(strCat("No tensor with name ", shortName, " found: ", reason,
                ". Anchor it with Options.anchorTensor(short_name, long_name) before compiling, "
                "then call the model."));
}

std::vector<std::string> anchorableNames(const std::vector<std::string>& used, bool training,
                                         const std::vector<std::string>& trained,
                                         const std::vector<std::string>& optimizerState) {
  std::vector<std::string> names = used;
  if (!training) return names;
  for (const std::string& name : used)
    names.push_back(kUpdatedAnchorPrefix + name);
  for (const std::string& parameter : trained) {
    if (contains(used, parameter)) names.push_back(kGradientAnchorPrefix + parameter);
  }
  names.push_back(kLossScaleAnchor);
  names.insert(names.end(), optimizerState.begin(), optimizerState.end());
  return names;
}

} // namespace popsim::host
