#pragma once

#include "profile/json.h"

#include <string>
#include <tuple>
#include <vector>

namespace popsim::profile {

// A pipeline stage as profiles list it: its IPU and the blocks it runs.
struct StageBlocks {
  int64_t stage = 0;
  int64_t ipu = 0;
  std::vector<std::string> blocks;
};

// Stages from the strategy's assignment of (block, stage, ipu), in stage order.
std::vector<StageBlocks>
stageList(const std::vector<std::tuple<std::string, int64_t, int64_t>>& assigned);

Json toJson(const std::vector<StageBlocks>& stages);
std::vector<StageBlocks> stagesFromJson(const Json& entries);

} // namespace popsim::profile
