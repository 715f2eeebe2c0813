#include "frontend/node_context.h"

#include "common/float16.h"
#include "frontend/aliasing.h"
#include "frontend/dtype_conversion.h"
#include "ir/state_names.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

namespace popsim::frontend {

ir::Value* ConstantTensors::get(const at::Tensor& tensor) {
  const bool versioned = !tensor.is_inference();
  const std::pair<const void*, int64_t> key{tensor.unsafeGetTensorImpl(),
                                            versioned ? tensor._version() : 0};
  auto it = byTensor_.find(key);
  if (versioned && it != byTensor_.end()) {
    return it->second;
  }
  at::Tensor data = tensor.detach();
  if (data.scalar_type() == c10::ScalarType::Double) {
    data = data.to(c10::ScalarType::Float); // popsim computes in float32
  }
  // 8- and 16-bit integers are int32 on the device, as the host widens such inputs.
  if (data.scalar_type() == c10::ScalarType::Byte || data.scalar_type() == c10::ScalarType::Char ||
      data.scalar_type() == c10::ScalarType::Short) {
    data = data.to(c10::ScalarType::Int);
  }
  const std::optional<ir::DType> dtype = toIrDType(data.scalar_type());
  if (!dtype.has_value()) {
    throw UnsupportedLowering(std::string("a constant tensor of dtype ") +
                              c10::toString(data.scalar_type()));
  }
  const ir::TensorType type{*dtype, ir::Shape(data.sizes().begin(), data.sizes().end())};
  // float16 constants are held as their float32 carriers (exact).
  data = data.to(toTorchDType(ir::storageDType(*dtype))).contiguous();
  std::vector<uint8_t> bytes(type.storageBytes());
  if (!bytes.empty()) {
    std::memcpy(bytes.data(), data.data_ptr(), bytes.size());
  }
  ir::Value* value = graph_.addConstant(type, std::move(bytes));
  if (versioned) byTensor_.emplace(key, value);
  return value;
}

NodeContext::NodeContext(const torch::jit::Node& node, ValueMap& values, ir::Graph& graph,
                         ConstantTensors& constants, ImportState& state,
                         ir::SourceLocation location)
    : node_(node), values_(values), graph_(graph), constants_(constants), state_(state),
      location_(std::move(location)), opName_(node.kind().toQualString()) {
  if (const std::optional<size_t> out = argumentIndex("out")) {
    const auto type = node_.inputs().at(*out)->type()->cast<c10::TensorType>();
    if (type != nullptr && type->scalarType().has_value())
      outDType_ = toIrDType(*type->scalarType());
  }
  dtypeIndex_ = argumentIndex("dtype");
}

bool NodeContext::isOutDType(size_t index) const {
  if (!outDType_.has_value() || dtypeIndex_ != index) return false;
  const FrontendValue& value = input(index);
  return value.isStatic() && value.constant.isNone();
}

std::optional<size_t> NodeContext::argumentIndex(const std::string& name) const {
  const c10::FunctionSchema* schema = node_.maybeSchema();
  if (schema == nullptr) {
    return std::nullopt;
  }
  const c10::optional<int> index = schema->argumentIndexWithName(name);
  if (!index.has_value() || static_cast<size_t>(*index) >= numInputs()) {
    return std::nullopt;
  }
  return static_cast<size_t>(*index);
}

const FrontendValue& NodeContext::input(size_t index) const {
  if (index >= numInputs()) {
    unsupported("a call with " + std::to_string(numInputs()) + " arguments (argument " +
                std::to_string(index) + " is missing)");
  }
  return values_.at(node_.inputs()[index]);
}

bool NodeContext::isNone(size_t index) const {
  const FrontendValue& value = input(index);
  // torch.sum(x, out=y) computes in y's dtype, as dtype=y.dtype would.
  return value.isStatic() && value.constant.isNone() && !isOutDType(index);
}

bool NodeContext::isTensor(size_t index) const {
  const FrontendValue& value = input(index);
  return value.kind == FrontendValue::Kind::Tensor ||
         (value.isStatic() && value.constant.isTensor());
}

bool NodeContext::isTensorList(size_t index) const {
  const FrontendValue& value = input(index);
  if (value.kind == FrontendValue::Kind::List) {
    return std::all_of(value.elements.begin(), value.elements.end(), [](const FrontendValue& e) {
      return e.kind == FrontendValue::Kind::Tensor || (e.isStatic() && e.constant.isTensor());
    });
  }
  return value.isStatic() && value.constant.isTensorList();
}

bool NodeContext::isString(size_t index) const {
  const FrontendValue& value = input(index);
  return value.isStatic() && value.constant.isString();
}

std::optional<LoweringContext::MemoryLayout> NodeContext::memoryLayout(size_t index) const {
  const FrontendValue& value = input(index);
  if (value.isStatic() && value.constant.isTensor()) {
    const at::Tensor& tensor = value.constant.toTensor();
    return MemoryLayout{tensor.strides().vec(), tensor.storage_offset()};
  }
  const torch::jit::Value* traced = node_.inputs()[index];
  const auto type = traced->type()->cast<c10::TensorType>();
  if (type == nullptr) return std::nullopt;
  const auto strides = type->strides().concrete_sizes();
  if (!strides) return std::nullopt;
  MemoryLayout layout{*strides, std::nullopt};
  // An aten op's output that is not a view of its input is memory the op
  // allocated, which starts at offset 0. A model input may be a view of the
  // caller's tensor, and a list element may be a split's view.
  const torch::jit::Node& producer = *traced->node();
  if (producer.kind().is_aten() && sharedInputOf(producer, traced->offset()) == nullptr) {
    layout.storageOffset = 0;
  }
  return layout;
}

void NodeContext::placeAt(const std::string& file, int64_t line, const std::string& function) {
  location_.file = file;
  location_.line = line;
  location_.function = function;
}

std::optional<double> NodeContext::staticScalar(size_t index) const {
  const FrontendValue& value = input(index);
  if (!value.isStatic()) {
    return std::nullopt;
  }
  const c10::IValue& v = value.constant;
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool() ? 1.0 : 0.0;
  if (v.isTensor() && v.toTensor().dim() == 0) return v.toTensor().item<double>();
  return std::nullopt;
}

std::optional<ir::DType> NodeContext::numberDType(size_t index) const {
  const FrontendValue& value = input(index);
  if (!value.isStatic()) return std::nullopt;
  const c10::IValue& v = value.constant;
  if (v.isBool()) return ir::DType::Bool;
  if (v.isInt()) return ir::DType::Int64;
  if (v.isDouble()) return ir::DType::Float32;
  // The tracer records a Python number of a tensor op (`t[0] * 2`) as a 0-d
  // tensor constant that keeps eager's "wrapped number" mark; PyTorch
  // promotes it as the number it was, not as a 0-d tensor.
  if (v.isTensor() && v.toTensor().unsafeGetTensorImpl()->is_wrapped_number()) {
    const c10::ScalarType scalar = v.toTensor().scalar_type();
    if (scalar == c10::ScalarType::Bool) return ir::DType::Bool;
    return c10::isFloatingType(scalar) ? ir::DType::Float32 : ir::DType::Int64;
  }
  return std::nullopt;
}

const c10::IValue& NodeContext::staticArgument(size_t index, const char* expected) const {
  const FrontendValue& value = input(index);
  if (!value.isStatic()) {
    unsupported("argument " + std::to_string(index) + " (" + expected +
                ") is computed from tensor values at runtime; popsim needs it at compile time "
                "(data-dependent shapes and values are not supported)");
  }
  return value.constant;
}

ir::Value* NodeContext::asTensor(const FrontendValue& value, size_t index) {
  if (value.kind == FrontendValue::Kind::Tensor) {
    return value.tensor;
  }
  if (value.isStatic() && value.constant.isTensor()) {
    return constants_.get(value.constant.toTensor());
  }
  if (value.isStatic() && (value.constant.isDouble() || value.constant.isInt())) {
    return graph_.addScalarConstant(static_cast<float>(value.constant.toScalar().toDouble()));
  }
  unsupported("argument " + std::to_string(index) + " is not a tensor");
}

ir::Value* NodeContext::tensor(size_t index) {
  const auto cast = castOperands_.find(index);
  return cast != castOperands_.end() ? cast->second : asTensor(input(index), index);
}

namespace {

// aten ops lowered to several IR ops with intermediate values, which
// float16 would round at every step where PyTorch and the IPU round once.
const std::set<std::string>& opsComputedInFloat32() {
  static const std::set<std::string> ops = {
      "aten::lerp",
      "aten::upsample_linear1d",
      "aten::upsample_bilinear2d",
      "aten::upsample_bicubic2d",
      "aten::upsample_trilinear3d",
      "aten::_upsample_bilinear2d_aa",
      "aten::_upsample_bicubic2d_aa",
      "aten::grid_sampler",
      "aten::grid_sampler_2d",
      "aten::grid_sampler_3d",
      "aten::max_unpool2d",
      "aten::max_unpool3d",
      "aten::embedding_bag",
      "aten::_embedding_bag",
      "aten::cross_entropy_loss",
      "aten::kl_div",
      "aten::huber_loss",
      "aten::smooth_l1_loss",
      "aten::poisson_nll_loss",
      "aten::multi_margin_loss",
      "aten::multilabel_margin_loss",
      "aten::hinge_embedding_loss",
      "aten::cosine_embedding_loss",
      "aten::margin_ranking_loss",
      "aten::soft_margin_loss",
      "aten::multilabel_soft_margin_loss",
      "aten::binary_cross_entropy",
      "aten::binary_cross_entropy_with_logits",
      "aten::ctc_loss",
      "aten::triplet_margin_loss",
      "aten::logsumexp",
      "aten::linalg_vector_norm",
      "aten::norm",
      "aten::nansum",
      "aten::group_norm",
      "aten::instance_norm",
      "aten::var",
      "aten::std",
      "aten::var_mean",
      "aten::std_mean",
  };
  return ops;
}

} // namespace

bool NodeContext::computeHalfInFloat32() {
  if (opsComputedInFloat32().count(opName_) == 0) return false;
  bool half = false;
  for (size_t i = 0; i < numInputs(); ++i) {
    const FrontendValue& value = input(i);
    if (value.kind == FrontendValue::Kind::Tensor &&
        tensor(i)->type().dtype == ir::DType::Float16) {
      castOperands_[i] = emit(ir::OpKind::Cast, {tensor(i)},
                              {{"dtype", std::string(ir::dtypeName(ir::DType::Float32))}});
      half = true;
    }
  }
  return half;
}

void NodeContext::restoreHalfOutputs() {
  for (size_t i = 0; i < numOutputs(); ++i) {
    const auto traced = node_.outputs()[i]->type()->cast<c10::TensorType>();
    if (traced == nullptr || traced->scalarType() != c10::ScalarType::Half) continue;
    FrontendValue& value = values_.at(node_.outputs()[i]);
    if (value.kind == FrontendValue::Kind::Tensor &&
        value.tensor->type().dtype == ir::DType::Float32) {
      value.tensor = emit(ir::OpKind::Cast, {value.tensor},
                          {{"dtype", std::string(ir::dtypeName(ir::DType::Float16))}});
    }
  }
}

namespace {

// Layers whose float operands besides the activation are the module's own
// parameters: a weight matrix or filter, a bias, a norm's scale and shift.
const std::set<std::string>& parameterisedLayers() {
  static const std::set<std::string> kLayers = {"aten::linear",
                                                "aten::addmm",
                                                "aten::mm",
                                                "aten::matmul",
                                                "aten::_convolution",
                                                "aten::convolution",
                                                "aten::conv1d",
                                                "aten::conv2d",
                                                "aten::conv3d",
                                                "aten::conv_transpose1d",
                                                "aten::conv_transpose2d",
                                                "aten::conv_transpose3d",
                                                "aten::group_norm",
                                                "aten::prelu"};
  return kLayers;
}

// Whether `value` reads a model weight (a parameter or buffer) unchanged,
// directly or through views such as Linear's transpose.
bool readsWeight(const FrontendValue& value) {
  if (!value.alias.has_value() || value.alias->storage == nullptr) return false;
  const ir::Value* root = value.alias->storage->root;
  return root != nullptr && root->role() == ir::ValueRole::Weight &&
         value.alias->storage->contents == root && value.alias->opaqueView.empty();
}

} // namespace

bool NodeContext::castsParametersToActivations() {
  // PopTorch runs a float16 activation through a layer whose parameters are
  // float32 in float16, casting the parameters (eager PyTorch refuses the
  // mix); PyTorch's promotion would compute the layer, and everything after
  // it, in float32.
  if (parameterisedLayers().count(opName_) == 0) return false;
  std::vector<size_t> parameters;
  bool halfActivation = false;
  for (size_t i = 0; i < numInputs(); ++i) {
    const FrontendValue& value = input(i);
    if (value.kind != FrontendValue::Kind::Tensor || !ir::isFloat(value.tensor->type().dtype)) {
      continue;
    }
    const bool isHalf = value.tensor->type().dtype == ir::DType::Float16;
    if (!isHalf && readsWeight(value)) {
      parameters.push_back(i);
    } else if (isHalf && !readsWeight(value)) {
      halfActivation = true;
    } else if (!isHalf) {
      return false; // a float32 activation: PyTorch's promotion decides
    }
  }
  if (!halfActivation || parameters.empty()) return false;
  for (size_t i : parameters) {
    castOperands_[i] = emit(ir::OpKind::Cast, {input(i).tensor},
                            {{"dtype", std::string(ir::dtypeName(ir::DType::Float16))}});
  }
  return true;
}

namespace {

// The dtype and rank of a floating-point tensor operand, runtime or computed
// at compile time; nothing for other operands (numbers, integer tensors...).
std::optional<std::pair<ir::DType, int64_t>> floatOperand(const FrontendValue& value) {
  if (value.kind == FrontendValue::Kind::Tensor) {
    const ir::TensorType& type = value.tensor->type();
    if (!ir::isFloat(type.dtype)) return std::nullopt;
    return std::make_pair(type.dtype, type.rank());
  }
  if (!value.isStatic() || !value.constant.isTensor()) return std::nullopt;
  const at::Tensor& tensor = value.constant.toTensor();
  const std::optional<ir::DType> dtype = toIrDType(tensor.scalar_type());
  if (!dtype || !ir::isFloat(*dtype)) return std::nullopt;
  return std::make_pair(*dtype, static_cast<int64_t>(tensor.dim()));
}

} // namespace

void NodeContext::unifyMixedFloats(bool downcast) {
  if (!downcast && castsParametersToActivations()) return;
  // Ops that cast or normalise keep their operands: the result's dtype is
  // what they are asked for, and norms mix float32 statistics with float16
  // activations by design (Precision.runningStatisticsAlwaysFloat). So does
  // normal, whose result takes mean's dtype (else std's) in eager PyTorch,
  // which its lowering follows.
  static const std::set<std::string> kKeep = {
      "aten::to",         "aten::type_as",           "aten::batch_norm",
      "aten::layer_norm", "aten::group_norm",        "aten::instance_norm",
      "aten::_to_copy",   "aten::native_layer_norm", "aten::normal"};
  if (kKeep.count(opName_) != 0) return;
  std::vector<std::pair<size_t, ir::DType>> floats; // (argument, dtype)
  bool half = false;
  bool single = false;
  for (size_t i = 0; i < numInputs(); ++i) {
    // A tensor computed when the model compiles (a causal mask that forward()
    // builds with torch.full, say) takes part as a runtime tensor does.
    const std::optional<std::pair<ir::DType, int64_t>> operand = floatOperand(input(i));
    if (!operand) continue;
    floats.emplace_back(i, operand->first);
    // Promotion: only a float32 tensor with dimensions outranks float16 ones.
    if (operand->first == ir::DType::Float16) {
      half = true;
    } else if (downcast || operand->second > 0) {
      single = true;
    }
  }
  if (!half || !single) return;
  const c10::FunctionSchema* schema = node_.maybeSchema();
  const bool inPlace = schema != nullptr && !schema->arguments().empty() &&
                       schema->arguments()[0].alias_info() != nullptr &&
                       schema->arguments()[0].alias_info()->isWrite();
  const ir::DType mixed = downcast ? ir::DType::Float16 : ir::DType::Float32;
  const ir::DType target = inPlace && floats[0].first == 0 ? floats[0].second : mixed;
  for (const auto& [i, dtype] : floats) {
    if (dtype == target || (inPlace && i == 0)) continue;
    castOperands_[i] = emit(ir::OpKind::Cast, {asTensor(input(i), i)},
                            {{"dtype", std::string(ir::dtypeName(target))}});
  }
}

std::vector<ir::Value*> NodeContext::tensorList(size_t index) {
  const FrontendValue& value = input(index);
  std::vector<ir::Value*> tensors;
  if (value.kind == FrontendValue::Kind::List) {
    for (const FrontendValue& element : value.elements) {
      tensors.push_back(asTensor(element, index));
    }
  } else if (value.isStatic() && value.constant.isTensorList()) {
    for (const at::Tensor& element : value.constant.toTensorVector()) {
      tensors.push_back(constants_.get(element));
    }
  } else {
    unsupported("argument " + std::to_string(index) + " is not a list of tensors");
  }
  return tensors;
}

std::vector<bool> NodeContext::uint8ListElements(size_t index) const {
  std::vector<bool> result;
  const torch::jit::Value* list = node_.inputs().at(index);
  if (list->node()->kind() != c10::prim::ListConstruct) return result;
  for (const torch::jit::Value* element : list->node()->inputs()) {
    const auto type = element->type()->cast<c10::TensorType>();
    result.push_back(type != nullptr && type->scalarType() == c10::ScalarType::Byte);
  }
  return result;
}

std::vector<ir::Value*> NodeContext::optionalTensorList(size_t index) {
  const FrontendValue& value = input(index);
  std::vector<ir::Value*> tensors;
  const auto isNoneValue = [](const FrontendValue& v) {
    return v.isStatic() && v.constant.isNone();
  };
  if (value.kind == FrontendValue::Kind::List) {
    for (const FrontendValue& element : value.elements) {
      tensors.push_back(isNoneValue(element) ? nullptr : asTensor(element, index));
    }
  } else if (value.isStatic() && value.constant.isList()) {
    for (const c10::IValue& element : value.constant.toListRef()) {
      tensors.push_back(element.isNone() ? nullptr
                                         : asTensor(FrontendValue::ofStatic(element), index));
    }
  } else {
    unsupported("argument " + std::to_string(index) + " is not a list of optional tensors");
  }
  return tensors;
}

int64_t NodeContext::toInt(size_t index) const {
  const c10::IValue& v = staticArgument(index, "an integer");
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool() ? 1 : 0;
  if (v.isTensor() && v.toTensor().dim() == 0) return v.toTensor().item<int64_t>();
  unsupported("argument " + std::to_string(index) + " is a " + v.tagKind() + ", not an integer");
}

double NodeContext::toDouble(size_t index) const {
  if (auto scalar = staticScalar(index)) {
    return *scalar;
  }
  staticArgument(index, "a number");
  unsupported("argument " + std::to_string(index) + " is not a number");
}

bool NodeContext::toBool(size_t index) const {
  const c10::IValue& v = staticArgument(index, "a boolean");
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  unsupported("argument " + std::to_string(index) + " is a " + v.tagKind() + ", not a boolean");
}

std::string NodeContext::toString(size_t index) const {
  const c10::IValue& v = staticArgument(index, "a string");
  if (!v.isString()) {
    unsupported("argument " + std::to_string(index) + " is a " + v.tagKind() + ", not a string");
  }
  return v.toStringRef();
}

std::vector<int64_t> NodeContext::toIntList(size_t index) const {
  const FrontendValue& value = input(index);
  if (value.kind == FrontendValue::Kind::List) {
    unsupported("argument " + std::to_string(index) +
                " (a list of integers) is computed from tensor values at runtime");
  }
  const c10::IValue& v = staticArgument(index, "a list of integers");
  if (v.isIntList()) return v.toIntVector();
  if (v.isInt()) return {v.toInt()};
  if (v.isTensor() && v.toTensor().dim() <= 1 &&
      c10::isIntegralType(v.toTensor().scalar_type(), /*includeBool=*/false)) {
    // An integer tensor known at compile time (repeat_interleave's counts).
    const at::Tensor values = v.toTensor().to(at::kLong).contiguous().reshape({-1});
    return {values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + values.numel()};
  }
  unsupported("argument " + std::to_string(index) + " is a " + v.tagKind() +
              ", not a list of integers");
}

std::vector<double> NodeContext::toDoubleList(size_t index) const {
  const c10::IValue& v = staticArgument(index, "a list of numbers");
  if (v.isDoubleList()) return v.toDoubleVector();
  if (v.isIntList()) {
    const std::vector<int64_t> ints = v.toIntVector();
    return {ints.begin(), ints.end()};
  }
  if (v.isDouble() || v.isInt()) return {v.toScalar().toDouble()};
  unsupported("argument " + std::to_string(index) + " is a " + v.tagKind() +
              ", not a list of numbers");
}

ir::DType NodeContext::toDType(size_t index) const {
  if (isOutDType(index)) return *outDType_; // an out= overload without dtype=: the out tensor's
  const c10::IValue& v = staticArgument(index, "a dtype");
  if (!v.isInt()) {
    unsupported("argument " + std::to_string(index) + " is not a dtype");
  }
  const auto type = static_cast<c10::ScalarType>(v.toInt());
  const std::optional<ir::DType> dtype = toIrDType(type);
  if (!dtype.has_value()) {
    unsupported(pythonDTypeName(type) +
                ", a dtype popsim does not compute with; it computes with float16, float32, "
                "int32, int64 and bool tensors (float64 as float32): convert to one of them" +
                (type == c10::ScalarType::BFloat16
                     ? " (torch.autocast converts to bfloat16 on the CPU unless given "
                       "dtype=torch.float16)"
                     : ""));
  }
  return *dtype;
}

namespace {

// Lowerings write numbers as float32 constants (0.0, 1.0, infinity); next to
// a float16 tensor such a 0-d constant takes the tensor's dtype, as PyTorch
// gives a 0-d operand the dtype of a dimensioned one of its category.
std::vector<ir::Value*> constantsInPartnersDType(ir::Graph& graph,
                                                 const std::vector<ir::Value*>& inputs) {
  std::optional<ir::DType> partner;
  bool scalarConstants = false;
  for (const ir::Value* input : inputs) {
    if (!ir::isFloat(input->type().dtype)) continue;
    const bool scalarConstant =
        input->role() == ir::ValueRole::Constant && input->type().rank() == 0;
    scalarConstants = scalarConstants || scalarConstant;
    if (!scalarConstant) partner = input->type().dtype;
  }
  if (!partner.has_value() || !scalarConstants) return inputs;
  std::vector<ir::Value*> result = inputs;
  for (ir::Value*& input : result) {
    if (ir::isFloat(input->type().dtype) && input->type().dtype != *partner &&
        input->role() == ir::ValueRole::Constant && input->type().rank() == 0) {
      float value = 0.0f;
      std::memcpy(&value, input->constantData().data(), sizeof value);
      if (*partner == ir::DType::Float16) value = roundToHalf(value);
      std::vector<uint8_t> bytes(sizeof value);
      std::memcpy(bytes.data(), &value, sizeof value);
      input = graph.addConstant({*partner, {}}, std::move(bytes));
    }
  }
  return result;
}

} // namespace

ir::Value* NodeContext::emit(ir::OpKind kind, const std::vector<ir::Value*>& inputs,
                             ir::Attributes attrs) {
  return graph_.apply(kind, constantsInPartnersDType(graph_, inputs), std::move(attrs), location_);
}

std::vector<ir::Value*> NodeContext::emitMulti(ir::OpKind kind,
                                               const std::vector<ir::Value*>& inputs,
                                               ir::Attributes attrs) {
  return graph_
      .addNode(kind, constantsInPartnersDType(graph_, inputs), std::move(attrs), location_)
      ->outputs();
}

ir::Value* NodeContext::constant(const ir::TensorType& type, std::vector<uint8_t> bytes) {
  return graph_.addConstant(type, std::move(bytes));
}

void NodeContext::markLoss(ir::Value* value, LossKind kind) {
  state_.losses.emplace_back(value, kind);
}

ir::Value* NodeContext::randomCounter() {
  if (ir::Value* counter = graph_.findState(ir::kRandomCounterName)) {
    return counter;
  }
  return graph_.addState(ir::kRandomCounterName, {ir::DType::Int64, {}}, ir::StateKind::Random);
}

void NodeContext::assign(ir::Value* variable, ir::Value* value) {
  graph_.addNode(ir::OpKind::Assign, {variable, value}, {}, location_);
}

void NodeContext::setOutput(size_t index, ir::Value* value) {
  // An out= overload returns its out tensor, in that tensor's dtype (eager
  // casts the result into it).
  if (const std::optional<ir::DType> out = outDType_;
      out.has_value() && value != nullptr && value->type().dtype != *out) {
    value = emit(ir::OpKind::Cast, {value}, {{"dtype", std::string(ir::dtypeName(*out))}});
  }
  values_[node_.outputs().at(index)] = FrontendValue::ofTensor(value);
}

void NodeContext::setOutputList(size_t index, const std::vector<ir::Value*>& values) {
  std::vector<FrontendValue> elements;
  for (ir::Value* value : values) {
    elements.push_back(FrontendValue::ofTensor(value));
  }
  values_[node_.outputs().at(index)] = FrontendValue::ofList(std::move(elements));
}

} // namespace popsim::frontend
