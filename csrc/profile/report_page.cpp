#include "profile/report_page.h"

#include "profile/profile_analysis.h"
#include "profile/report_assets.h"
#include "profile/report_style.h"

#include <algorithm>

namespace popsim::profile {
namespace {

// JSON whose text cannot close the <script> element around it.
std::string scriptJson(const Json& value) {
  std::string text = jsonText(value);
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) {
    text.replace(at, 2, "<\\/");
  }
  return text;
}

std::string escapeHtml(const std::string& text) {
  std::string result;
  for (char c : text) {
    switch (c) {
    case '&': result += "&amp;"; break;
    case '<': result += "&lt;"; break;
    case '>': result += "&gt;"; break;
    case '"': result += "&quot;"; break;
    case '\'': result += "&#x27;"; break;
    default: result += c;
    }
  }
  return result;
}

// The categories of memory.json's IPUs in stacking order: the known ones in
// categoryColours()' order, then the others as they first appear.
std::vector<std::string> categoryOrder(const Json& ipus) {
  std::vector<std::string> seen;
  for (const Json& ipu : ipus) {
    const Json categories = categoriesOf(ipu);
    for (const auto& [name, bytes] : categories.items()) {
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
  }
  std::vector<std::string> order;
  for (const auto& [name, colour] : categoryColours()) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) order.emplace_back(name);
  }
  for (const std::string& name : seen) {
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  return order;
}

Json memoryData(const Json& memory, const std::vector<std::string>& order) {
  const Json& ipus = memory.at("ipus");
  Json alwaysLive = Json::object();
  if (!ipus.empty()) {
    const Json& first = ipus.front().at("always_live").at("categories");
    for (const std::string& name : order)
      alwaysLive[name] = first.contains(name);
  }
  Json entries = Json::array();
  for (const Json& ipu : ipus) {
    entries.push_back({{"ipu", ipu.at("ipu")},
                       {"limit", ipu.at("limit")},
                       {"total", ipu.at("total")},
                       {"categories", categoriesOf(ipu)}});
  }
  return {{"categories", order}, {"always_live", alwaysLive}, {"ipus", entries}};
}

// Replaces each placeholder of `part` in one pass, so that no value is
// searched for the other placeholders.
std::string filled(const std::string& part,
                   const std::vector<std::pair<std::string, std::string>>& values) {
  std::string result;
  size_t at = 0;
  while (at < part.size()) {
    size_t next = std::string::npos;
    const std::pair<std::string, std::string>* value = nullptr;
    for (const auto& candidate : values) {
      const size_t found = part.find(candidate.first, at);
      if (found < next) {
        next = found;
        value = &candidate;
      }
    }
    if (value == nullptr) break;
    result += part.substr(at, next - at) + value->second;
    at = next + value->first.size();
  }
  return result + part.substr(std::min(at, part.size()));
}

} // namespace

std::string pageData(const std::string& model, const std::string& kind, const Json& memory,
                     const CallTrace* trace, const std::string& summary) {
  Json kinds = Json::array(), transferKinds = Json::array();
  Json kindColours = Json::object(), kindLabels = Json::object();
  for (const KindStyle& style : kindStyles()) {
    kinds.push_back(style.kind);
    if (isTransferKind(style.kind)) transferKinds.push_back(style.kind);
    kindColours[style.kind] = style.colour;
    kindLabels[style.kind] = style.label;
  }
  const std::vector<std::string> order = categoryOrder(memory.at("ipus"));
  Json categoryColourMap = Json::object();
  for (const std::string& name : order)
    categoryColourMap[name] = categoryColour(name);
  Json data = {{"model", model},
               {"kind", kind},
               {"chip", memory.at("chip")},
               {"num_ipus", memory.at("ipus").size()},
               {"clock_hz", trace != nullptr ? Json(trace->clockHz) : Json(nullptr)},
               {"kinds", kinds},
               {"transfer_kinds", transferKinds},
               {"kind_colours", kindColours},
               {"kind_labels", kindLabels},
               {"category_colours", categoryColourMap},
               {"memory", memoryData(memory, order)},
               {"trace", nullptr},
               {"summary", summary}};
  if (trace != nullptr) {
    Json events = Json::array();
    for (const TraceEvent& event : trace->events) {
      size_t index = 0;
      while (index < kindStyles().size() && event.kind != kindStyles()[index].kind)
        ++index;
      events.push_back(
          {event.ipu, index, event.start, event.end, event.microBatch, event.step, event.task});
    }
    data["trace"] = {{"total_cycles", trace->totalCycles},
                     {"schedule", trace->pipeline.schedule},
                     {"stages", trace->pipeline.stages},
                     {"events", events}};
  }
  return scriptJson(data);
}

std::pair<std::string, std::string>
reportParts(const std::string& title, const std::string& dataJson, const std::string& planSection) {
  const std::string page = reportTemplate();
  const std::string host = "__HOST__";
  const size_t split = page.find(host);
  const std::vector<std::pair<std::string, std::string>> values = {{"__TITLE__", escapeHtml(title)},
                                                                   {"__CSS__", reportStyleSheet()},
                                                                   {"__JS__", reportScript()},
                                                                   {"__DATA__", dataJson},
                                                                   {"__PLAN__", planSection}};
  return {filled(page.substr(0, split), values), filled(page.substr(split + host.size()), values)};
}

std::string hostData(const Json& host) { return scriptJson(host); }

} // namespace popsim::profile
