#pragma once

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>

namespace popsim::runtime {

// The oneDNN engine every kernel of every simulated IPU runs on.
inline const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Restores the caller's OpenMP thread count when kernels have been built or
// run with an IPU's share of the host.
class ThreadCountScope {
public:
  explicit ThreadCountScope(int64_t threads) : previous_(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(static_cast<int>(threads));
  }
  ~ThreadCountScope() { omp_set_num_threads(previous_); }
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

private:
  int previous_;
};

} // namespace popsim::runtime
