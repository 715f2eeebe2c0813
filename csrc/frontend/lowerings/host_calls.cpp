// popsim::host_call (popsim.CPU, PopTorch's CPU op): a Python function the
// host runs in the middle of an inference program. The Python side traced
// the function's result types and passes them as arguments.

#include "common/check.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// host_call(inputs, id, output_dtypes, output_ranks, output_shapes) -> outputs
void lowerHostCall(LoweringContext& ctx) {
  const std::string id = ctx.toString(1);
  POPSIM_CHECK(!ctx.training(), ErrorKind::Unsupported, "The CPU op '", id,
               "' is in a training model: CPU ops run in inference models only, as in PopTorch. "
               "Compute it with torch ops in the model, or outside the training model.");
  ctx.setOutputList(0, ctx.emitMulti(ir::OpKind::HostCall, ctx.tensorList(0),
                                     {{"id", id},
                                      {"output_dtypes", ctx.toString(2)},
                                      {"output_ranks", ctx.toIntList(3)},
                                      {"output_shapes", ctx.toIntList(4)}}));
}

} // namespace

void registerHostCalls(LoweringRegistry& registry) {
  registry.add("popsim::host_call", lowerHostCall);
}

} // namespace popsim::frontend::lowerings
