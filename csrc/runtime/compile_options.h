#pragma once

#include "clock/call_setup.h"
#include "compiler/compiler_options.h"
#include "device/ipu_system.h"
#include "memory/memory_options.h"

#include <cstdint>

namespace popsim::runtime {

// How the runtime binds and runs kernels.
struct KernelOptions {
  // Host threads each simulated IPU computes with; 0: the caller's thread
  // count for one IPU, else an equal share of the host's threads.
  int64_t threadsPerIpu = 0;
  // Precision.enableStochasticRounding: float16 results round stochastically,
  // from random numbers that this seed (the model's random seed) makes
  // reproducible.
  bool stochasticRounding = false;
  uint64_t stochasticRoundingSeed = 0;
  // Precision.enableFloatingPointExceptions: an op that overflows (or divides
  // by zero, or computes NaN from operands without it) fails the run, naming
  // the op and its source line.
  bool floatingPointExceptions = false;
  // Simulator.costOnly: nothing is bound. No device memory is allocated and
  // no kernel is built, so a call computes no value and only replays the
  // simulated clock: compiling, the memory plan, the cycles and the
  // timeline are those of a run that computes (sizing a job whose values
  // would take hours on the host).
  bool costOnly = false;
  // (Float16 partials are the memory plan's MemoryOptions::halfPartials,
  // which the kernels follow.)
};

// Everything a model is compiled with, one part per stage, each field in
// the first stage that needs it (later stages read it from there):
// the simulated system, the compiler's program options, the memory plan's,
// the clock's and the kernels'.
struct CompileOptions {
  device::IpuSystemConfig system;
  compiler::CompilerOptions compiler;
  memory::MemoryOptions memory;
  clock::ClockOptions clock;
  KernelOptions kernels;
  // A sizing (popsim.sizeJob) reports a program that does not fit instead of
  // refusing it. Only cost-only: anything that binds memory must fit.
  bool allowOverCapacity = false;

  // Throws InvalidOption naming the setting for what users can get wrong.
  void validate() const;
};

} // namespace popsim::runtime
