#pragma once

#include <string>
#include <utility>
#include <vector>

// Colours and labels of profile drawings, shared by report.html and the
// Python package's matplotlib helpers (which read them through the
// bindings), so both draw a profile alike: forward green, backward red, as
// PopVision does.
namespace popsim::profile {

struct KindStyle {
  const char* kind; // a trace event kind, in legend order
  const char* colour;
  const char* label;
};
const std::vector<KindStyle>& kindStyles();

// Memory report categories (memory/memory_report.cpp) in stacking order.
const std::vector<std::pair<const char*, const char*>>& categoryColours();
// The colour of a category categoryColours() does not list.
const char* otherCategoryColour();
std::string categoryColour(const std::string& category);

} // namespace popsim::profile
