#include "api/cpp_spelling.h"

#include "profile/sizing_report.h"

#include <array>
#include <cctype>
#include <string_view>
#include <utility>

namespace popsim::api {
namespace {

void replaceAll(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// Advice that names Python-only annotations, and what C++ programs do instead.
constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kPhrases{{
    {profile::kOneIpuCheckpoints, ""},
    {"with popsim.Block and an execution strategy",
     "with an execution strategy over the model's modules (popsim::PipelinedExecution)"},
    {"(popsim.Block and an execution strategy)",
     "(an execution strategy over the model's modules, popsim::PipelinedExecution)"},
    {"Options.Training.recomputation(True) or popsim.recomputationCheckpoint",
     "Options.Training.recomputation(true)"},
    {"(model.half())", "(module.to(at::kHalf))"},
}};

// Names the C++ API has under the same name (include/popsim), after
// "popsim." or PopTorch's "poptorch." in a message.
constexpr std::array<std::string_view, 10> kCppNames{"PipelinedExecution",
                                                     "ShardedExecution",
                                                     "PipelineSchedule",
                                                     "Options",
                                                     "OutputMode",
                                                     "ReductionType",
                                                     "MeanReductionStrategy",
                                                     "HalfFloatCastingBehavior",
                                                     "TensorLocationSettings",
                                                     "sizeJob"};

bool startsWithName(const std::string& text, size_t at, std::string_view name) {
  const size_t end = at + name.size();
  return text.compare(at, name.size(), name) == 0 &&
         (end == text.size() ||
          !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'));
}

// popsim.X / poptorch.X -> popsim::X for X of kCppNames, but for Python's.
void scopeNames(std::string& text) {
  for (std::string_view module : {"popsim.", "poptorch."}) {
    for (size_t at = text.find(module); at != std::string::npos; at = text.find(module, at + 1)) {
      const bool python = at >= 9 && text.compare(at - 9, 9, "Python's ") == 0;
      const size_t name = at + module.size();
      for (std::string_view known : kCppNames) {
        if (!python && startsWithName(text, name, known)) {
          text.replace(at, module.size(), "popsim::");
          break;
        }
      }
    }
  }
}

// torch.Size([2, 3]) -> [2, 3], as LibTorch prints sizes.
void plainSizes(std::string& text) {
  constexpr std::string_view open = "torch.Size(";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const size_t close = text.find(')', at);
    if (close == std::string::npos) return;
    text.erase(close, 1);
    text.erase(at, open.size());
  }
}

} // namespace

std::string inCppSpelling(std::string text) {
  for (const auto& [python, cpp] : kPhrases)
    replaceAll(text, python, cpp);
  scopeNames(text);
  plainSizes(text);
  replaceAll(text, "(True)", "(true)");
  replaceAll(text, "(False)", "(false)");
  return text;
}

} // namespace popsim::api
