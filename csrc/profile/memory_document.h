#pragma once

#include "profile/json.h"

#include <string>

namespace popsim::runtime {
class Executable;
}

namespace popsim::profile {

// memory.json, format version 2: per IPU its limit, the always-live and
// not-always-live bytes by category, the bytes kept in Streaming Memory, the
// peak (the plan's footprint), the largest tensors, the program's ops with
// their cycles, and the temporaries' budget under availableMemoryProportion
// with the ops it splits into passes. Then, from the memory plan: activation
// bytes live at each program step of each IPU, each IPU's activation peak,
// and every planned tensor with its lifetime.
Json memoryDocument(const runtime::Executable& executable, const std::string& model,
                    const std::string& kind);
// memory.json's "ipus" alone: what the analysis reads, without the liveness
// and tensor lists that cost a pass over the whole plan.
Json memoryIpuEntries(const runtime::Executable& executable);

} // namespace popsim::profile
