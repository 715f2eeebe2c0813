#pragma once

// How many of a process's replicas take turns on each of its host threads.
// Poplar runs stream callbacks, the host's side of every transfer, on the
// process's main thread by default (streamCallbacks.multiThreadMode
// singleThread, numWorkerThreads 0). Otherwise numWorkerThreads worker threads
// run them, with the main thread too in the collaborative mode; "auto" gives
// one per CPU core, which popsim takes to be one per replica. The simulated
// clock charges each replica's transfer the turns of its thread's replicas
// (device::IpuSystemConfig::replicasPerHostThread).

#include "host/session_options.h"

#include <cstdint>

namespace popsim::host {

// `session` are the session's engine options, `environment` those of
// POPLAR_ENGINE_OPTIONS, which win option by option, as in Poplar.
int64_t replicasPerHostThread(const StreamCallbackThreads& session,
                              const StreamCallbackThreads& environment, int64_t replicas);

} // namespace popsim::host
