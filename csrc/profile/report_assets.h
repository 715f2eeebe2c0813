#pragma once

// The page's template, style sheet and script (assets/report.*), compiled in
// by CMake, so that every program writes the same page without looking for
// files at run time.
namespace popsim::profile {

const char* reportTemplate();
const char* reportStyleSheet();
const char* reportScript();

} // namespace popsim::profile
