#include "profile/report_style.h"

namespace popsim::profile {

const std::vector<KindStyle>& kindStyles() {
  static const std::vector<KindStyle> styles = {
      {"forward", "#2e9e44", "forward (F)"},
      {"backward", "#d1343a", "backward (B)"},
      {"forward+backward", "#c98a12", "last stage's forward + backward (FB)"},
      {"update", "#3569c9", "weight update (U)"},
      {"copy", "#8c8c8c", "inter-IPU copy"},
      {"host_input", "#5fb3d9", "host input"},
      {"stream_copy", "#2f7fa6", "host data on the compute tiles"},
      {"host_output", "#9a63c4", "host output"},
      {"streaming", "#b58b5c", "Streaming Memory (off-chip tensors)"},
  };
  return styles;
}

const std::vector<std::pair<const char*, const char*>>& categoryColours() {
  static const std::vector<std::pair<const char*, const char*>> colours = {
      {"weights", "#2e6fb7"},
      {"gradient accumulators", "#6fa8dc"},
      {"optimizer state", "#8e5cb5"},
      {"random state", "#c27ba0"},
      {"constants", "#999999"},
      {"input streams", "#5fb3d9"},
      {"code", "#f1b04c"},
      {"activations", "#2e9e44"},
      {"stash", "#d1343a"},
  };
  return colours;
}

const char* otherCategoryColour() { return "#444444"; }

std::string categoryColour(const std::string& category) {
  for (const auto& [name, colour] : categoryColours()) {
    if (category == name) return colour;
  }
  return otherCategoryColour();
}

} // namespace popsim::profile
