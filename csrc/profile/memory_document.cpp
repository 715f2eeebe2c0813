#include "profile/memory_document.h"

#include "memory/memory_report.h"
#include "profile/records_json.h"
#include "runtime/executable.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace popsim::profile {
namespace {

constexpr int kFormatVersion = 2;

// One planned tensor of the memory plan, with its lifetime in program steps.
struct MemorySlot {
  std::string description;
  std::string type;
  int64_t ipu = 0;
  std::string region;
  uint64_t bytes = 0;
  int64_t firstStep = 0;
  int64_t lastStep = 0;
  bool offChip = false;
};

std::vector<MemorySlot> memorySlotsOf(const runtime::Executable& executable) {
  const memory::MemoryPlan& plan = executable.memoryPlan();
  std::vector<MemorySlot> slots;
  for (const ir::Value* root : plan.roots()) {
    const memory::TensorSlot& slot = plan.slot(root);
    slots.push_back({memory::describeValue(*root), root->type().str(), slot.ipu,
                     memory::memoryRegionName(slot.region), plan.footprint(root),
                     slot.lifetime.first, slot.lifetime.last, executable.isOffChip(root)});
  }
  return slots;
}

Json programEntry(const runtime::ProgramStep& step) {
  Json entry = {
      {"op", step.op}, {"task", step.task}, {"cycles", step.cycles}, {"location", step.location}};
  if (step.temporaryBytes != 0) { // matmuls and convolutions
    entry["temporary_bytes"] = step.temporaryBytes;
    entry["passes"] = step.passes;
  }
  return entry;
}

// The budget availableMemoryProportion gives one matmul or convolution on the
// IPU, and the ops that need more, so run in serial passes (most passes first).
Json temporaries(const memory::IpuMemoryReport& ipu,
                 const std::vector<runtime::ProgramStep>& program) {
  std::vector<const runtime::ProgramStep*> split;
  for (const runtime::ProgramStep& step : program) {
    if (step.ipu == ipu.ipu && step.passes > 1) split.push_back(&step);
  }
  std::stable_sort(split.begin(), split.end(),
                   [](auto* a, auto* b) { return a->passes > b->passes; });
  uint64_t peak = 0;
  for (const memory::MemoryCategory& category : ipu.categories) {
    if (category.name == "temporaries") peak = category.bytes;
  }
  Json ops = Json::array();
  for (const runtime::ProgramStep* step : split) {
    ops.push_back({{"op", step->op},
                   {"task", step->task},
                   {"location", step->location},
                   {"passes", step->passes},
                   {"bytes_per_pass", step->temporaryBytes},
                   {"bytes_in_one_pass", step->unboundedTemporaryBytes}});
  }
  Json proportion = nullptr;
  if (ipu.capacity != 0) {
    const double share =
        static_cast<double>(ipu.temporaryBudget) / static_cast<double>(ipu.capacity);
    proportion = std::nearbyint(share * 1e4) / 1e4;
  }
  return {{"peak", peak},
          {"budget", ipu.temporaryBudget},
          {"available_memory_proportion", proportion},
          {"split_ops", ops}};
}

Json ipuEntry(const memory::IpuMemoryReport& ipu,
              const std::vector<runtime::ProgramStep>& program) {
  Json always = Json::object(), notAlways = Json::object(), streaming = Json::object();
  for (const memory::MemoryCategory& category : ipu.categories) {
    (category.alwaysLive ? always : notAlways)[category.name] = category.bytes;
  }
  for (const memory::MemoryCategory& category : ipu.streamingMemory) {
    streaming[category.name] = category.bytes;
  }
  Json tensors = toJson(ipu)["largest_tensors"];
  Json steps = Json::array();
  for (const runtime::ProgramStep& step : program) {
    if (step.ipu == ipu.ipu) steps.push_back(programEntry(step));
  }
  const uint64_t total = ipu.total();
  return {{"ipu", ipu.ipu},
          {"limit", ipu.capacity},
          {"total", total},
          {"peak", total},
          {"free", static_cast<int64_t>(ipu.capacity) - static_cast<int64_t>(total)},
          {"fraction_of_limit",
           ipu.capacity != 0 ? Json(static_cast<double>(total) / static_cast<double>(ipu.capacity))
                             : Json(nullptr)},
          {"always_live", {{"total", ipu.alwaysLive()}, {"categories", always}}},
          {"not_always_live", {{"total", ipu.notAlwaysLive()}, {"categories", notAlways}}},
          {"streaming_memory", {{"total", ipu.offChip()}, {"categories", streaming}}},
          {"largest_tensors", tensors},
          {"program", steps},
          {"temporaries", temporaries(ipu, program)}};
}

// Per IPU, at each program step that runs one of its ops: the activation
// bytes and tensors live then (a tensor is live from the step that writes it
// to its last reader). Always-live memory comes on top and does not change.
Json liveness(const std::vector<MemorySlot>& slots,
              const std::vector<runtime::ProgramStep>& program) {
  std::map<int64_t, std::vector<const MemorySlot*>> activations;
  for (const MemorySlot& slot : slots) {
    if (slot.region == "activations" && !slot.offChip) activations[slot.ipu].push_back(&slot);
  }
  Json result = Json::object();
  for (size_t index = 0; index < program.size(); ++index) {
    const runtime::ProgramStep& step = program[index];
    uint64_t bytes = 0;
    int64_t tensors = 0;
    for (const MemorySlot* slot : activations[step.ipu]) {
      const auto at = static_cast<int64_t>(index);
      if (slot->firstStep <= at && at <= slot->lastStep) {
        bytes += slot->bytes;
        ++tensors;
      }
    }
    result[std::to_string(step.ipu)].push_back({{"step", index},
                                                {"op", step.op},
                                                {"task", step.task},
                                                {"live_bytes", bytes},
                                                {"live_tensors", tensors}});
  }
  return result;
}

// Per IPU, the most activation bytes live at one step, and that step (the
// first such). The plan's activation arena is at least this.
Json activationPeak(const Json& liveness) {
  Json peaks = Json::object();
  for (const auto& [ipu, points] : liveness.items()) {
    const Json* peak = &points.front();
    for (const Json& point : points) {
      if (point["live_bytes"].get<uint64_t>() > (*peak)["live_bytes"].get<uint64_t>()) {
        peak = &point;
      }
    }
    peaks[ipu] = {{"bytes", (*peak)["live_bytes"]},
                  {"step", (*peak)["step"]},
                  {"op", (*peak)["op"]},
                  {"task", (*peak)["task"]}};
  }
  return peaks;
}

// Per IPU, every planned tensor, largest first, with its category and lifetime.
Json allTensors(std::vector<MemorySlot> slots) {
  std::stable_sort(slots.begin(), slots.end(),
                   [](const MemorySlot& a, const MemorySlot& b) { return a.bytes > b.bytes; });
  Json tensors = Json::object();
  for (const MemorySlot& slot : slots) {
    tensors[std::to_string(slot.ipu)].push_back({{"description", slot.description},
                                                 {"type", slot.type},
                                                 {"category", slot.region},
                                                 {"bytes", slot.bytes},
                                                 {"first_step", slot.firstStep},
                                                 {"last_step", slot.lastStep},
                                                 {"off_chip", slot.offChip}});
  }
  return tensors;
}

} // namespace

Json memoryIpuEntries(const runtime::Executable& executable) {
  Json ipus = Json::array();
  for (const memory::IpuMemoryReport& ipu : executable.memoryReport().ipus) {
    ipus.push_back(ipuEntry(ipu, executable.program()));
  }
  return ipus;
}

Json memoryDocument(const runtime::Executable& executable, const std::string& model,
                    const std::string& kind) {
  const memory::MemoryReport& report = executable.memoryReport();
  const std::vector<runtime::ProgramStep>& program = executable.program();
  const Json ipus = memoryIpuEntries(executable);
  uint64_t limit = 0, total = 0, always = 0, notAlways = 0;
  for (const memory::IpuMemoryReport& ipu : report.ipus) {
    limit += ipu.capacity;
    total += ipu.total();
    always += ipu.alwaysLive();
    notAlways += ipu.notAlwaysLive();
  }
  std::vector<MemorySlot> slots = memorySlotsOf(executable);
  const Json live = liveness(slots, program);
  return {{"format", "popsim-memory"},
          {"version", kFormatVersion},
          {"model", model},
          {"kind", kind},
          {"chip", report.chip},
          {"ipus", ipus},
          {"totals",
           {{"limit", limit},
            {"total", total},
            {"always_live", always},
            {"not_always_live", notAlways}}},
          {"liveness", live},
          {"activation_peak", activationPeak(live)},
          {"all_tensors", allTensors(std::move(slots))}};
}

} // namespace popsim::profile
