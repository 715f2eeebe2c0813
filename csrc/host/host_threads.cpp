#include "host/host_threads.h"

#include <algorithm>

namespace popsim::host {

int64_t replicasPerHostThread(const StreamCallbackThreads& session,
                              const StreamCallbackThreads& environment, int64_t replicas) {
  const StreamCallbackMode mode = environment.mode.has_value() ? *environment.mode
                                  : session.mode.has_value()   ? *session.mode
                                                               : StreamCallbackMode::SingleThread;
  if (mode == StreamCallbackMode::SingleThread) {
    return replicas;
  }
  const bool environmentWorkers = environment.workers.has_value() || environment.autoWorkers;
  const StreamCallbackThreads& workers = environmentWorkers ? environment : session;
  int64_t threads = replicas; // "auto": a thread per core, one per replica
  if (!workers.autoWorkers) {
    const int64_t count = workers.workers.value_or(0);
    threads = std::max<int64_t>(1, count + (mode == StreamCallbackMode::Collaborative ? 1 : 0));
  }
  return (replicas + threads - 1) / threads; // the replicas per thread, rounded up
}

} // namespace popsim::host
