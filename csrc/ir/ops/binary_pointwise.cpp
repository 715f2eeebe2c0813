#include "ir/binary_functions.h"
#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"
#include "ir/vector_arithmetic.h"

namespace popsim::ir::ops {
namespace {

const BinaryFunction& functionOf(const Attributes& attrs) {
  const std::string& name = attrs.getString("function");
  const BinaryFunction* function = findBinaryFunction(name);
  POPSIM_CHECK(function != nullptr, ErrorKind::Compilation, "unknown binary function '", name,
               "'.");
  return *function;
}

Shape broadcastOf(const TensorType& a, const TensorType& b) {
  const auto shape = broadcastShapes(a.shape, b.shape);
  POPSIM_CHECK(shape.has_value(), ErrorKind::Compilation, "shapes ", a.str(), " and ", b.str(),
               " do not broadcast.");
  return *shape;
}

// binary_pointwise(A, B) {function} -> f(A, B) with broadcasting. Both
// operands have one dtype (the lowering promotes them as PyTorch does) that
// the function computes with.
std::vector<TensorType> inferBinaryPointwise(const std::vector<TensorType>& inputs,
                                             const Attributes& attrs) {
  const BinaryFunction& function = functionOf(attrs);
  const DType dtype = inputs[0].dtype;
  POPSIM_CHECK(inputs[1].dtype == dtype, ErrorKind::Compilation, function.name,
               " needs operands of one dtype, got ", inputs[0].str(), " and ", inputs[1].str(),
               ".");
  if (isFloat(dtype)) {
    POPSIM_CHECK(function.value != nullptr, ErrorKind::Compilation, function.name,
                 " takes integer or bool tensors, got ", inputs[0].str(), ".");
  } else {
    POPSIM_CHECK(dtype != DType::Float64, ErrorKind::Compilation, function.name,
                 " does not compute with float64 (", inputs[0].str(), ").");
    POPSIM_CHECK(function.integerValue != nullptr, ErrorKind::Compilation, function.name,
                 " takes float tensors, got ", inputs[0].str(), ".");
  }
  const Shape shape = broadcastOf(inputs[0], inputs[1]);
  return {{function.result == BinaryResult::Bool ? DType::Bool : dtype, shape}};
}

// binary_pointwise_grad(dY, A, B) {function, operand} -> dY * df/d(operand)
// at the broadcast shape (the gradient rule sums it to the operand's shape).
std::vector<TensorType> inferBinaryPointwiseGrad(const std::vector<TensorType>& inputs,
                                                 const Attributes& attrs) {
  const BinaryFunction& function = functionOf(attrs);
  const int64_t operand = attrs.getInt("operand");
  POPSIM_CHECK(operand == 0 || operand == 1, ErrorKind::Compilation, "operand must be 0 or 1, got ",
               operand, ".");
  POPSIM_CHECK((operand == 0 ? function.derivativeA : function.derivativeB) != nullptr,
               ErrorKind::Compilation, function.name, " has no derivative for operand ", operand,
               ".");
  requireFloat(inputs[0], "input 0 (grad_output)");
  requireFloat(inputs[1], "input 1 (a)");
  requireFloat(inputs[2], "input 2 (b)");
  requireShape(inputs[0], broadcastOf(inputs[1], inputs[2]), "input 0 (grad_output)");
  return {inputs[0]};
}

// where(C, A, B) -> A where C else B, all three broadcast together.
std::vector<TensorType> inferWhere(const std::vector<TensorType>& inputs, const Attributes&) {
  requireDType(inputs[0], DType::Bool, "input 0 (condition)");
  POPSIM_CHECK(inputs[1].dtype == inputs[2].dtype, ErrorKind::Compilation,
               "where needs a and b of one dtype, got ", inputs[1].str(), " and ", inputs[2].str(),
               ".");
  const Shape ab = broadcastOf(inputs[1], inputs[2]);
  return {{inputs[1].dtype, broadcastOf(inputs[0], {inputs[1].dtype, ab})}};
}

// The table's derivative of each operand, summed back over broadcasting;
// zeros where it has none (rounded divisions have a zero gradient).
Grads binaryPointwiseGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const std::string& name = nodeOf(b).attrs().getString("function");
  const ir::BinaryFunction* function = ir::findBinaryFunction(name);
  POPSIM_ASSERT(function != nullptr, "no binary function ", name, ".");
  for (int64_t operand = 0; operand < 2; ++operand) {
    const auto k = static_cast<size_t>(operand);
    if (!needed[k]) continue;
    const ir::Shape& shape = in(b, k)->type().shape;
    if ((operand == 0 ? function->derivativeA : function->derivativeB) == nullptr) {
      result[k] = b.zeros(shape);
      continue;
    }
    Value* d = b.emit(OpKind::BinaryPointwiseGrad, {g[0], in(b, 0), in(b, 1)},
                      {{"function", name}, {"operand", operand}});
    result[k] = b.sumToShape(d, shape);
  }
  return result;
}

// where(c, a, b): the gradient goes to the operand each element came from.
Grads whereGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* zero = b.zeros({});
  if (needed[1]) {
    result[1] = b.sumToShape(b.emit(OpKind::Where, {in(b, 0), g[0], zero}), in(b, 1)->type().shape);
  }
  if (needed[2]) {
    result[2] = b.sumToShape(b.emit(OpKind::Where, {in(b, 0), zero, g[0]}), in(b, 2)->type().shape);
  }
  return result;
}

// One vertex each: the function's operations per element (vector_arithmetic.h).
OpWork binaryPointwiseWork(const Node& node) {
  return work::elementwiseFunction(node,
                                   binaryArithmetic(node.attrs().getString("function")).value);
}

OpWork binaryPointwiseGradWork(const Node& node) {
  const auto operand = static_cast<size_t>(node.attrs().getInt("operand"));
  return work::elementwiseFunction(
      node, binaryArithmetic(node.attrs().getString("function")).gradient.at(operand));
}

} // namespace

void registerBinaryPointwiseOps(OpRegistry& registry) {
  registry.add(OpKind::BinaryPointwise, 2, 2, {"a", "b"}, {{"function", AttrType::String}},
               inferBinaryPointwise);
  registry.add(OpKind::BinaryPointwiseGrad, 3, 3, {"grad_output", "a", "b"},
               {{"function", AttrType::String}, {"operand", AttrType::Int}},
               inferBinaryPointwiseGrad);
  registry.add(OpKind::Where, 3, 3, {"condition", "a", "b"}, {}, inferWhere);
  registry.setGradient(OpKind::BinaryPointwise, binaryPointwiseGradient);
  registry.setGradient(OpKind::Where, whereGradient);
  registry.setWork(OpKind::BinaryPointwise, binaryPointwiseWork);
  registry.setWork(OpKind::BinaryPointwiseGrad, binaryPointwiseGradWork);
  registry.setWork(OpKind::Where, work::elementwise<1>);
}

} // namespace popsim::ir::ops
