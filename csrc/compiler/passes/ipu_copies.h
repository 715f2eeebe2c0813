#pragma once

#include "ir/graph.h"

namespace popsim::compiler {

// Makes every node read only values on its own IPU, on a graph ordered by
// task (orderNodesByTask):
// - a value computed on one IPU and used on another gets one ipu_copy per
//   destination IPU, placed in the destination's earliest task that uses it,
//   just before that use; later uses there read the copy;
// - a graph input is streamed to the IPU of its first user and copied on;
// - a constant used on several IPUs is duplicated (it is read-only);
// - a read-only buffer (readOnlyBuffer) lives on the IPU of its first user
//   and is copied on, as an input is.
// Other weights cannot be shared across IPUs (stage assignment checks), and
// replicated state has one copy per IPU (training program).
void insertIpuCopies(ir::Graph& graph);

// A weight that is a buffer (not a parameter) no op writes: a causal mask
// or position table registered once and read by every layer. Its uses on
// other IPUs read copies; a parameter, or a buffer the model updates (batch
// norm's running statistics), stays on one IPU.
bool readOnlyBuffer(const ir::Value& weight);

} // namespace popsim::compiler
