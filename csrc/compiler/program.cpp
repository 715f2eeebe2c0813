#include "compiler/program.h"

namespace popsim::compiler {

Program programOf(std::unique_ptr<ir::Graph> graph, const CompilerOptions& options) {
  Program program;
  program.kind = options.program;
  program.scheduleKind = options.schedule;
  program.deviceIterations = options.deviceIterations;
  program.gradientAccumulation = options.gradientAccumulation;
  program.output = options.output;
  program.layout = TaskLayout(*graph, program.training());
  program.schedule = buildSchedule(program.layout, program.microBatchesPerStep(), options.schedule);
  program.graph = std::move(graph);
  return program;
}

std::vector<std::vector<ScheduledTask>> Program::ipuOrders() const {
  std::vector<std::vector<ScheduledTask>> orders(static_cast<size_t>(layout.numIpus()));
  for (const PipelineCycle& cycle : schedule) {
    for (const ScheduledTask& scheduled : cycle) {
      orders[static_cast<size_t>(layout.tasks()[scheduled.task].ipu)].push_back(scheduled);
    }
  }
  return orders;
}

OutputCopy Program::outputCopy(size_t index, int64_t microBatch) const {
  if (graph->isInputUpdate(index)) {
    return {microBatch, false}; // every micro-batch's rows of the caller's input
  }
  return {output.slotOf(microBatch, microBatchesPerCall(), gradientAccumulation),
          output.mode == OutputMode::Sum && microBatch > 0};
}

std::vector<ir::TensorType> Program::inputHostTypes() const {
  std::vector<ir::TensorType> types;
  for (const ir::Value* input : graph->inputs()) {
    ir::TensorType type = input->type();
    if (type.rank() > 0) type.shape[0] *= microBatchesPerCall(); // a scalar: one micro-batch
    types.push_back(type);
  }
  return types;
}

std::vector<ir::TensorType> Program::outputHostTypes() const {
  std::vector<ir::TensorType> types;
  const OutputSpec everyMicroBatch{OutputMode::All};
  for (size_t i = 0; i < graph->outputs().size(); ++i) {
    const ir::TensorType& type = graph->outputs()[i]->type();
    const OutputSpec& spec = graph->isInputUpdate(i) ? everyMicroBatch : output;
    types.push_back({type.dtype, spec.hostShape(type.shape, microBatchesPerCall())});
  }
  return types;
}

} // namespace popsim::compiler
