#include "profile/pipeline_stages.h"

#include <map>

namespace popsim::profile {

std::vector<StageBlocks>
stageList(const std::vector<std::tuple<std::string, int64_t, int64_t>>& assigned) {
  std::map<int64_t, StageBlocks> byStage;
  for (const auto& [block, stage, ipu] : assigned) {
    auto [entry, added] = byStage.try_emplace(stage, StageBlocks{stage, ipu, {}});
    entry->second.blocks.push_back(block);
  }
  std::vector<StageBlocks> stages;
  for (auto& [stage, entry] : byStage)
    stages.push_back(std::move(entry));
  return stages;
}

Json toJson(const std::vector<StageBlocks>& stages) {
  Json entries = Json::array();
  for (const StageBlocks& stage : stages) {
    entries.push_back({{"stage", stage.stage}, {"ipu", stage.ipu}, {"blocks", stage.blocks}});
  }
  return entries;
}

std::vector<StageBlocks> stagesFromJson(const Json& entries) {
  std::vector<StageBlocks> stages;
  for (const Json& entry : entries) {
    stages.push_back({entry.at("stage").get<int64_t>(), entry.at("ipu").get<int64_t>(),
                      entry.at("blocks").get<std::vector<std::string>>()});
  }
  return stages;
}

} // namespace popsim::profile
