#include "profile/records_json.h"

#include "memory/memory_report.h"
#include "runtime/executable.h"

namespace popsim::profile {

Json toJson(const memory::IpuMemoryReport& ipu) {
  Json entry = {
      {"ipu", ipu.ipu}, {"capacity", ipu.capacity}, {"temporary_budget", ipu.temporaryBudget}};
  if (ipu.ioTiles != 0) {
    entry["io_tiles"] = {
        {"tiles", ipu.ioTiles}, {"bytes", ipu.ioTileBytes}, {"capacity", ipu.ioTileCapacity}};
  }
  entry["total"] = ipu.total();
  entry["always_live"] = ipu.alwaysLive();
  entry["not_always_live"] = ipu.notAlwaysLive();
  Json categories = Json::object();
  for (const memory::MemoryCategory& category : ipu.categories) {
    categories[category.name] = {{"bytes", category.bytes}, {"always_live", category.alwaysLive}};
  }
  entry["categories"] = categories;
  Json streaming = Json::object();
  for (const memory::MemoryCategory& category : ipu.streamingMemory) {
    streaming[category.name] = category.bytes;
  }
  entry["streaming_memory"] = streaming;
  entry["off_chip"] = ipu.offChip();
  Json tensors = Json::array();
  for (const memory::TensorMemory& tensor : ipu.largestTensors) {
    tensors.push_back({{"description", tensor.description},
                       {"type", tensor.type},
                       {"category", tensor.category},
                       {"bytes", tensor.bytes}});
  }
  entry["largest_tensors"] = tensors;
  return entry;
}

Json toJson(const memory::MemoryReport& report) {
  Json ipus = Json::array();
  for (const memory::IpuMemoryReport& ipu : report.ipus)
    ipus.push_back(toJson(ipu));
  return {{"chip", report.chip}, {"ipus", ipus}};
}

Json toJson(const runtime::ProgramStep& step) {
  return {{"op", step.op},
          {"name", step.name},
          {"location", step.location},
          {"implementation", step.implementation},
          {"task", step.task},
          {"ipu", step.ipu},
          {"cycles", step.cycles},
          {"temporary_bytes", step.temporaryBytes},
          {"passes", step.passes},
          {"unbounded_temporary_bytes", step.unboundedTemporaryBytes},
          {"sync_cycles", step.syncCycles},
          {"exchange_cycles", step.exchangeCycles},
          {"compute_cycles", step.computeCycles},
          {"collective", step.collective},
          {"recomputed", step.recomputed}};
}

Json toJson(const TraceEvent& event) {
  Json entry = {{"ipu", event.ipu},
                {"task", event.task},
                {"kind", event.kind},
                {"step", event.step},
                {"micro_batch", event.microBatch},
                {"cycle", event.cycle},
                {"start", event.start},
                {"end", event.end}};
  if (!event.fromIpus.empty()) entry["from_ipus"] = event.fromIpus;
  if (event.ioTiles) entry["io_tiles"] = true;
  if (event.output >= 0) entry["output"] = event.output;
  return entry;
}

Json toJson(const PipelineInfo& pipeline) {
  return {{"stages", pipeline.stages},
          {"ipus", pipeline.ipus},
          {"pipeline_stages", pipeline.pipelineStages},
          {"schedule", pipeline.schedule},
          {"cycles_per_step", pipeline.cyclesPerStep},
          {"prefetch_depth", pipeline.prefetchDepth},
          {"inputs_prepared_ahead", pipeline.inputsPreparedAhead},
          {"io_tiles", pipeline.ioTiles},
          {"replicas_per_host_thread", pipeline.replicasPerHostThread},
          {"host_exchanges_stall_every_ipu", pipeline.hostExchangesStallEveryIpu}};
}

TraceEvent traceEventFromJson(const Json& entry) {
  TraceEvent event;
  event.ipu = entry.at("ipu").get<int64_t>();
  event.task = entry.at("task").get<std::string>();
  event.kind = entry.at("kind").get<std::string>();
  event.step = entry.at("step").get<int64_t>();
  event.microBatch = entry.at("micro_batch").get<int64_t>();
  event.cycle = entry.at("cycle").get<int64_t>();
  event.start = entry.at("start").get<uint64_t>();
  event.end = entry.at("end").get<uint64_t>();
  event.fromIpus = entry.value("from_ipus", std::vector<int64_t>());
  event.ioTiles = entry.value("io_tiles", false);
  event.output = entry.value("output", int64_t{-1});
  return event;
}

PipelineInfo pipelineFromJson(const Json& entry) {
  PipelineInfo pipeline;
  pipeline.stages = entry.value("stages", int64_t{0});
  pipeline.ipus = entry.value("ipus", int64_t{0});
  pipeline.pipelineStages = entry.value("pipeline_stages", int64_t{0});
  pipeline.schedule = entry.value("schedule", std::string());
  pipeline.cyclesPerStep = entry.value("cycles_per_step", int64_t{0});
  pipeline.prefetchDepth = entry.value("prefetch_depth", int64_t{0});
  // Profiles written before 0.13 prepared prefetch_depth inputs ahead.
  pipeline.inputsPreparedAhead = entry.value("inputs_prepared_ahead", pipeline.prefetchDepth);
  pipeline.ioTiles = entry.value("io_tiles", int64_t{0});
  pipeline.replicasPerHostThread = entry.value("replicas_per_host_thread", int64_t{1});
  // Profiles written before 0.13 were simulated without the rule.
  pipeline.hostExchangesStallEveryIpu = entry.value("host_exchanges_stall_every_ipu", false);
  return pipeline;
}

} // namespace popsim::profile
