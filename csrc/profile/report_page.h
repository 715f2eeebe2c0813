#pragma once

#include "profile/call_trace.h"
#include "profile/json.h"

#include <string>
#include <utility>

// report.html: one self-contained page (inline CSS, script and data; no
// network) drawing a profile's pipeline Gantt chart and memory per IPU
// (assets/report.js), with the profile's text summary.
namespace popsim::profile {

// What the page's script draws, as JSON that cannot end the <script>
// element it is embedded in. `trace` is null before the first call.
std::string pageData(const std::string& model, const std::string& kind, const Json& memory,
                     const CallTrace* trace, const std::string& summary);

// The page as the text before and after the host's numbers: a call's page is
// first + hostData(...) + second, so writers render the parts once per
// compilation. `planSection` is HTML that popsim made (the job plan that
// chose this configuration, drawn by the Python planner), shown after the
// summary as it is; empty: no such section.
std::pair<std::string, std::string> reportParts(const std::string& title,
                                                const std::string& dataJson,
                                                const std::string& planSection = "");

// The host's numbers of a call ({"calls", "wall_ms"}), for the page.
std::string hostData(const Json& host);

} // namespace popsim::profile
