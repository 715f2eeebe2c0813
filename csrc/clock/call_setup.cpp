#include "clock/call_setup.h"

namespace popsim::clock {

ClockSetup callSetup(const compiler::Program& program, const memory::ProgramMemory& memory,
                     const costs::CostTable& costs, const ClockOptions& options) {
  ClockSetup setup;
  setup.layout = &program.layout;
  setup.tasks = costs.tasks;
  if (options.syntheticData) { // the data comes from the device
    for (costs::TaskCycles& task : setup.tasks) {
      task.streamsInputs = false;
      task.streamsOverlappedInputs = false;
    }
  }
  setup.schedule = &program.schedule;
  setup.steps = program.stepsPerCall();
  setup.microBatchesPerStep = program.microBatchesPerStep();
  setup.inputsPreparedAhead = memory.options.inputsPreparedAhead();
  setup.syncCycles = costs.syncCycles;
  setup.hostExchangesStallEveryIpu = options.hostExchangesStallEveryIpu;
  if (options.syntheticData) return setup; // outputs stay on the device
  setup.hostOutputs = [&program, &costs](size_t task, int64_t microBatch) {
    std::vector<costs::HostOutputCost> transfers;
    for (const costs::OutputTransfer& output : costs.outputs[task]) {
      const compiler::OutputCopy copy = program.outputCopy(output.output, microBatch);
      if (copy.slot < 0 || copy.accumulate) continue; // a sum leaves at the call's end
      transfers.push_back(output.cost);
      transfers.back().output = static_cast<int64_t>(output.output);
    }
    return transfers;
  };
  return setup;
}

} // namespace popsim::clock
