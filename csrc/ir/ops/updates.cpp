#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"
#include "ir/optimizer_hyperparameters.h"

// Type rules of ops that write weights or state in place: assignments,
// gradient accumulation and the fused optimizer steps. They have no outputs.
namespace popsim::ir::ops {
namespace {

// assign(variable, value): variable = value.
std::vector<TensorType> inferAssign(const std::vector<TensorType>& inputs, const Attributes&) {
  POPSIM_CHECK(inputs[0] == inputs[1], ErrorKind::Compilation, "assigning a ", inputs[1].str(),
               " to a ", inputs[0].str(), " variable.");
  return {};
}

// accumulate(accumulator, value): accumulator += value. With a count, a
// running mean over the `every` micro-batches of a step instead: the f-th
// value of a step (f = count % every) makes accumulator * (f / (f + 1)) +
// value * (1 / (f + 1)), and count goes up by one.
std::vector<TensorType> inferAccumulate(const std::vector<TensorType>& inputs,
                                        const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (accumulator)");
  if (inputs.size() == 3) {
    requireDType(inputs[2], DType::Int64, "input 2 (count)");
    requireShape(inputs[2], {}, "input 2 (count)");
  }
  POPSIM_CHECK(attrs.getInt("every") >= 1, ErrorKind::Compilation, "attribute every must be >= 1.");
  // A float32 accumulator may sum float16 gradients (PopTorch's accum_type).
  requireFloat(inputs[1], "input 1 (value)");
  requireShape(inputs[1], inputs[0].shape, "input 1 (value)");
  return {};
}

// fill(variable): every element = value.
std::vector<TensorType> inferFill(const std::vector<TensorType>&, const Attributes&) { return {}; }

// Gradients and optimizer state have the parameter's shape; they may be
// float32 for a float16 parameter (PopTorch's accum_type and momentum types).
void requireLike(const TensorType& type, const TensorType& param, const std::string& what) {
  POPSIM_CHECK(type.shape == param.shape && isFloat(type.dtype), ErrorKind::Compilation, what,
               " must be a float tensor of the parameter's shape ", shapeToString(param.shape),
               ", got ", type.str(), ".");
}

void checkCommon(const std::vector<TensorType>& inputs, size_t hyperCount) {
  requireFloat(inputs[0], "input 0 (param)");
  requireLike(inputs[1], inputs[0], "input 1 (grad)");
  requireDType(inputs[2], DType::Float64, "input 2 (hyper)");
  requireShape(inputs[2], {static_cast<int64_t>(hyperCount)}, "input 2 (hyper)");
}

void checkStep(const TensorType& step, const std::string& what) {
  requireDType(step, DType::Int64, what);
  requireRank(step, 0, what);
}

// sgd_update(param, grad, hyper[, momentum_buffer, step])
std::vector<TensorType> inferSgd(const std::vector<TensorType>& inputs, const Attributes&) {
  checkCommon(inputs, hyper::SgdCount);
  POPSIM_CHECK(inputs.size() == 3 || inputs.size() == 5, ErrorKind::Compilation,
               "sgd_update takes 3 inputs, or 5 with momentum.");
  if (inputs.size() == 5) {
    requireLike(inputs[3], inputs[0], "input 3 (momentum_buffer)");
    checkStep(inputs[4], "input 4 (step)");
  }
  return {};
}

// adam_update(param, grad, hyper, step, exp_avg, exp_avg_sq[, max_exp_avg_sq])
std::vector<TensorType> inferAdam(const std::vector<TensorType>& inputs, const Attributes& attrs) {
  checkCommon(inputs, hyper::AdamCount);
  checkStep(inputs[3], "input 3 (step)");
  const size_t expected = attrs.getBool("amsgrad") ? 7 : 6;
  POPSIM_CHECK(inputs.size() == expected, ErrorKind::Compilation,
               "adam_update with amsgrad=", attrs.getBool("amsgrad") ? "true" : "false", " takes ",
               expected, " inputs.");
  for (size_t i = 4; i < inputs.size(); ++i) {
    requireLike(inputs[i], inputs[0], "input " + std::to_string(i));
  }
  return {};
}

// lamb_update(param, grad, hyper, step, exp_avg, exp_avg_sq) {bias_correction}
std::vector<TensorType> inferLamb(const std::vector<TensorType>& inputs, const Attributes&) {
  checkCommon(inputs, hyper::LambCount);
  checkStep(inputs[3], "input 3 (step)");
  for (size_t i = 4; i < inputs.size(); ++i) {
    requireLike(inputs[i], inputs[0], "input " + std::to_string(i));
  }
  return {};
}

// rmsprop_update(param, grad, hyper, square_avg[, grad_avg][, momentum_buffer])
std::vector<TensorType> inferRmsprop(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  checkCommon(inputs, hyper::RmspropCount);
  const size_t expected =
      4 + (attrs.getBool("centered") ? 1 : 0) + (attrs.getBool("has_momentum") ? 1 : 0);
  POPSIM_CHECK(inputs.size() == expected, ErrorKind::Compilation, "rmsprop_update takes ", expected,
               " inputs for these attributes, got ", inputs.size(), ".");
  for (size_t i = 3; i < inputs.size(); ++i) {
    requireLike(inputs[i], inputs[0], "input " + std::to_string(i));
  }
  return {};
}

// LAMB on this replica's shard (Adam's work, two norms and a second pass),
// with its two squared norms summed over the replicas between the passes.
OpWork shardedLambWork(const Node& node) {
  OpWork work = work::elementwise<9, VectorOp::Plain, VectorOp::Sqrt, VectorOp::Divide>(node);
  work.collective = OpWork::Collective::AllReduce;
  work.collectiveBytes = 2 * sizeof(float);
  work.replicas = node.attrs().getInt("replicas");
  work.systemIpus = node.attrs().getInt("system_ipus");
  return work;
}

} // namespace

void registerUpdateOps(OpRegistry& registry) {
  registry.add(OpKind::Assign, 2, 2, {"variable", "value"}, {}, inferAssign);
  registry.setMutatedInputs(OpKind::Assign, {0});
  registry.add(OpKind::Accumulate, 2, 3, {"accumulator", "value", "count"},
               {{"every", AttrType::Int}}, inferAccumulate);
  registry.setMutatedInputs(OpKind::Accumulate, {0, 2});
  registry.add(OpKind::Fill, 1, 1, {"variable"}, {{"value", AttrType::Float}}, inferFill);
  registry.setMutatedInputs(OpKind::Fill, {0});
  registry.add(OpKind::SgdUpdate, 3, 5, {"param", "grad", "hyper", "momentum_buffer", "step"},
               {{"nesterov", AttrType::Bool}, {"maximize", AttrType::Bool}}, inferSgd);
  registry.setMutatedInputs(OpKind::SgdUpdate, {0, 3});
  registry.add(OpKind::AdamUpdate, 6, 7,
               {"param", "grad", "hyper", "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
               {{"amsgrad", AttrType::Bool},
                {"maximize", AttrType::Bool},
                {"decoupled_weight_decay", AttrType::Bool},
                {"bias_correction", AttrType::Bool}},
               inferAdam);
  registry.setMutatedInputs(OpKind::AdamUpdate, {0, 4, 5, 6});
  registry.add(OpKind::RmspropUpdate, 4, 6,
               {"param", "grad", "hyper", "square_avg", "grad_avg", "momentum_buffer"},
               {{"centered", AttrType::Bool},
                {"has_momentum", AttrType::Bool},
                {"maximize", AttrType::Bool},
                {"tf_variant", AttrType::Bool}},
               inferRmsprop);
  registry.setMutatedInputs(OpKind::RmspropUpdate, {0, 3, 4, 5});
  registry.add(OpKind::LambUpdate, 6, 6,
               {"param", "grad", "hyper", "step", "exp_avg", "exp_avg_sq"},
               {{"bias_correction", AttrType::Bool}}, inferLamb);
  registry.setMutatedInputs(OpKind::LambUpdate, {0, 4, 5});
  // lamb_update_sharded: lamb_update on this replica's shard of a parameter
  // (replicated tensor sharding), whose trust ratio takes the whole
  // parameter's and update's norms: their squares summed over the replicas.
  registry.add(OpKind::LambUpdateSharded, 6, 6,
               {"param", "grad", "hyper", "step", "exp_avg", "exp_avg_sq"},
               {{"bias_correction", AttrType::Bool},
                {"key", AttrType::String},
                {"replicas", AttrType::Int},
                {"system_ipus", AttrType::Int},
                {"group_stride", AttrType::Int}},
               inferLamb);
  registry.setMutatedInputs(OpKind::LambUpdateSharded, {0, 4, 5});
  registry.setWork(OpKind::Assign, work::movement);
  registry.setWork(OpKind::Accumulate, work::elementwise<1>);
  registry.setWork(OpKind::Fill, work::elementwise<1>);
  registry.setWork(OpKind::SgdUpdate, work::elementwise<2>);
  // Adam, RMSprop and LAMB divide by the root of their second moment once
  // per element, in one of their passes.
  registry.setWork(OpKind::AdamUpdate,
                   work::elementwise<6, VectorOp::Plain, VectorOp::Sqrt, VectorOp::Divide>);
  registry.setWork(OpKind::RmspropUpdate,
                   work::elementwise<4, VectorOp::Plain, VectorOp::Sqrt, VectorOp::Divide>);
  registry.setWork(OpKind::LambUpdate,
                   work::elementwise<9, VectorOp::Plain, VectorOp::Sqrt, VectorOp::Divide>);
  registry.setWork(OpKind::LambUpdateSharded, shardedLambWork);
}

} // namespace popsim::ir::ops
