#pragma once

#include "frontend/frontend_value.h"
#include "frontend/lowering_context.h"

#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <unordered_map>

namespace popsim::frontend {

using ValueMap = std::unordered_map<const torch::jit::Value*, FrontendValue>;

// What an import shares between nodes besides the value map: the options and
// the values marked as losses.
struct ImportState {
  bool training = false;
  int64_t randomSeed = 0;
  int64_t randomStreams = 0;
  bool downcastMixedFloats = true; // ImportOptions::downcastMixedFloats
  std::vector<std::pair<ir::Value*, LoweringContext::LossKind>> losses;
};

// Graph constants made from compile-time tensors, shared by all nodes so that
// a tensor used many times becomes one constant.
class ConstantTensors {
public:
  explicit ConstantTensors(ir::Graph& graph) : graph_(graph) {}
  // Throws UnsupportedLowering for dtypes popsim does not compute with.
  ir::Value* get(const at::Tensor& tensor);

private:
  ir::Graph& graph_;
  // By tensor and version: a tensor written in place at compile time after
  // a use is a new constant.
  std::map<std::pair<const void*, int64_t>, ir::Value*> byTensor_;
};

// The LoweringContext of one TorchScript node during import.
class NodeContext : public LoweringContext {
public:
  NodeContext(const torch::jit::Node& node, ValueMap& values, ir::Graph& graph,
              ConstantTensors& constants, ImportState& state, ir::SourceLocation location);

  const std::string& opName() const override { return opName_; }
  size_t numInputs() const override { return node_.inputs().size(); }
  size_t numOutputs() const override { return node_.outputs().size(); }
  std::optional<size_t> argumentIndex(const std::string& name) const override;
  bool isNone(size_t index) const override;
  // An out= overload's out tensor's dtype, as the trace saw it (none for
  // other overloads, or a dtype popsim does not compute with).
  std::optional<ir::DType> outDType() const { return outDType_; }
  std::vector<bool> uint8ListElements(size_t index) const override;
  bool isTensor(size_t index) const override;
  bool isTensorList(size_t index) const override;
  bool isString(size_t index) const override;
  std::optional<MemoryLayout> memoryLayout(size_t index) const override;
  std::optional<double> staticScalar(size_t index) const override;
  std::optional<ir::DType> numberDType(size_t index) const override;

  ir::Value* tensor(size_t index) override;
  std::vector<ir::Value*> tensorList(size_t index) override;
  std::vector<ir::Value*> optionalTensorList(size_t index) override;
  int64_t toInt(size_t index) const override;
  double toDouble(size_t index) const override;
  bool toBool(size_t index) const override;
  std::string toString(size_t index) const override;
  std::vector<int64_t> toIntList(size_t index) const override;
  std::vector<double> toDoubleList(size_t index) const override;
  ir::DType toDType(size_t index) const override;

  ir::Value* emit(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                  ir::Attributes attrs) override;
  std::vector<ir::Value*> emitMulti(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                                    ir::Attributes attrs) override;
  ir::Value* constant(const ir::TensorType& type, std::vector<uint8_t> bytes) override;
  void setOutput(size_t index, ir::Value* value) override;
  void setOutputList(size_t index, const std::vector<ir::Value*>& values) override;

  bool training() const override { return state_.training; }
  void markLoss(ir::Value* value, LossKind kind) override;
  ir::Value* randomCounter() override;
  int64_t nextRandomStream() override { return state_.randomStreams++; }
  int64_t randomSeed() const override { return state_.randomSeed; }
  bool downcastsMixedFloats() const override { return state_.downcastMixedFloats; }
  void assign(ir::Value* variable, ir::Value* value) override;
  void placeAt(const std::string& file, int64_t line, const std::string& function) override;

  // Casts the float tensor operands of an op that mixes float16 and float32
  // to one dtype (an in-place op's other operands to its target's dtype), so
  // that every lowering sees operands of one float dtype. `downcast`: to
  // float16, as PopTorch's FloatDowncastToHalf does. Otherwise to float32
  // when a float32 operand has dimensions, as PyTorch's promotion (and
  // PopTorch's HalfUpcastToFloat) does for every op, products included; a
  // 0-d float32 tensor does not promote a float16 one, as in PyTorch.
  void unifyMixedFloats(bool downcast);
  // For an aten op that popsim lowers to several IR ops (a loss, an
  // interpolation, a norm of a vector...): float16 operands are cast to
  // float32 for the lowering, and the outputs the trace recorded as float16
  // are rounded once at the end (restoreHalfOutputs), as PyTorch's kernels
  // and the IPU's fused operations round once. False when the op does not
  // take this path.
  bool computeHalfInFloat32();
  void restoreHalfOutputs();

private:
  // Under PyTorch's promotion, a parameterised layer (linear, convolution,
  // group norm, prelu) fed a float16 activation computes in float16 with its
  // float32 parameters cast, as PopTorch does. False when the op is not such
  // a layer or its operands do not mix that way.
  bool castsParametersToActivations();
  const FrontendValue& input(size_t index) const;
  // The argument as a compile-time value; unsupported when it is computed at runtime.
  const c10::IValue& staticArgument(size_t index, const char* expected) const;
  ir::Value* asTensor(const FrontendValue& value, size_t index);

  const torch::jit::Node& node_;
  // Found once per node: lowerings ask isNone and toDType many times.
  std::optional<ir::DType> outDType_;
  std::optional<size_t> dtypeIndex_; // the dtype= argument, if the schema has one
  // Whether `index` is an out= overload's dtype= argument left None, which
  // then means the out tensor's dtype.
  bool isOutDType(size_t index) const;
  ValueMap& values_;
  ir::Graph& graph_;
  ConstantTensors& constants_;
  ImportState& state_;
  ir::SourceLocation location_;
  std::string opName_;
  std::map<size_t, ir::Value*> castOperands_; // by argument index (unifyMixedFloats)
};

} // namespace popsim::frontend
