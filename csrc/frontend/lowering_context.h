#pragma once

#include "ir/graph.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace popsim::frontend {

// Thrown by a lowering that cannot handle a node (or some arguments of it);
// the importer collects these and reports all of them together.
class UnsupportedLowering : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// What a lowering function sees of one TorchScript node, without LibTorch:
// arguments are either compile-time values (ints, floats, lists, constant
// tensors) or runtime tensors (IR values). Shape arithmetic in the trace has
// already been evaluated, so sizes arrive as plain integers.
class LoweringContext {
public:
  virtual ~LoweringContext() = default;

  virtual const std::string& opName() const = 0; // "aten::conv2d"
  virtual size_t numInputs() const = 0;
  virtual size_t numOutputs() const = 0;
  // The position of a named argument in the op's schema, if it has one.
  virtual std::optional<size_t> argumentIndex(const std::string& name) const = 0;
  virtual bool isNone(size_t index) const = 0;
  // A tensor argument, static or runtime.
  virtual bool isTensor(size_t index) const = 0;
  virtual bool isString(size_t index) const = 0;
  // Where a tensor argument's elements sat in eager PyTorch's memory, as the
  // trace recorded it: each dimension's stride, and the storage offset where
  // it is known (0 for a tensor an op allocated; unknown for a model input or
  // a view of another tensor). Nullopt when the graph records no strides (a
  // scripted model's).
  struct MemoryLayout {
    std::vector<int64_t> strides;
    std::optional<int64_t> storageOffset;
  };
  virtual std::optional<MemoryLayout> memoryLayout(size_t index) const = 0;
  // A number known at compile time: an int/float/bool, or a 0-d constant tensor.
  virtual std::optional<double> staticScalar(size_t index) const = 0;
  // The dtype a Python number takes part in type promotion with (bool,
  // int64 for an int, float32 for a float); nullopt for tensors and others.
  virtual std::optional<ir::DType> numberDType(size_t index) const = 0;

  // The argument as an IR value; constant tensors become graph constants.
  virtual ir::Value* tensor(size_t index) = 0;
  virtual std::vector<ir::Value*> tensorList(size_t index) = 0;
  // Whether argument `index` is a list of tensors (a Tensor[] overload's).
  virtual bool isTensorList(size_t index) const = 0;
  // A list of optional tensors (Tensor?[]): nullptr for each None.
  virtual std::vector<ir::Value*> optionalTensorList(size_t index) = 0;
  // Per element of list argument `index`: whether the trace saw a uint8
  // tensor there. uint8 tensors arrive as int32 (the host widens them), and
  // eager PyTorch reads a uint8 index as a boolean mask.
  virtual std::vector<bool> uint8ListElements(size_t index) const = 0;
  virtual int64_t toInt(size_t index) const = 0;
  virtual double toDouble(size_t index) const = 0;
  virtual bool toBool(size_t index) const = 0;
  virtual std::string toString(size_t index) const = 0;
  virtual std::vector<int64_t> toIntList(size_t index) const = 0;
  virtual std::vector<double> toDoubleList(size_t index) const = 0;
  // A dtype argument (torch.float32, ...) as an IR dtype (float64 as
  // float32); a dtype popsim does not compute with (bfloat16, complex, ...)
  // is unsupported, named in the reason.
  virtual ir::DType toDType(size_t index) const = 0;

  // Adds an op at the node's source location and placement.
  virtual ir::Value* emit(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                          ir::Attributes attrs = {}) = 0;
  virtual std::vector<ir::Value*> emitMulti(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                                            ir::Attributes attrs = {}) = 0;
  // A graph constant holding `bytes` (row-major, type.bytes() long).
  virtual ir::Value* constant(const ir::TensorType& type, std::vector<uint8_t> bytes) = 0;
  virtual void setOutput(size_t index, ir::Value* value) = 0;
  virtual void setOutputList(size_t index, const std::vector<ir::Value*>& values) = 0;

  // Training programs: whether the model is imported for training, marking
  // the values of loss functions, and device state.
  virtual bool training() const = 0;
  // Precision.halfFloatCasting: whether float16 and float32 operands mix in
  // float16 (FloatDowncastToHalf) rather than by PyTorch's promotion.
  virtual bool downcastsMixedFloats() const = 0;
  enum class LossKind { Builtin, Identity }; // a torch loss function, or popsim.identity_loss
  virtual void markLoss(ir::Value* value, LossKind kind) = 0;
  // The i64 counter seeding dropout masks, and a distinct stream per dropout op.
  virtual ir::Value* randomCounter() = 0;
  virtual int64_t nextRandomStream() = 0;
  virtual int64_t randomSeed() const = 0;
  // variable = value, in program order (running statistics, in-place buffer updates).
  virtual void assign(ir::Value* variable, ir::Value* value) = 0;
  // The user's line the ops emitted from now on name, where the lowering knows it
  // better than the trace (a value guard's read, traced where forward() returns).
  virtual void placeAt(const std::string& file, int64_t line, const std::string& function) = 0;

  // Stops lowering this node; `reason` says which argument or case is unsupported.
  [[noreturn]] void unsupported(const std::string& reason) const {
    throw UnsupportedLowering(reason);
  }
};

} // namespace popsim::frontend
