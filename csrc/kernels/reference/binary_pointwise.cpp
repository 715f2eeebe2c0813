#include "kernels/reference/binary_pointwise.h"

#include "common/check.h"
#include "kernels/reference/families.h"

#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace popsim::kernels::reference {
namespace {

std::vector<ir::Shape> inputShapes(const ir::Node& node) {
  std::vector<ir::Shape> shapes;
  for (const ir::Value* input : node.inputs())
    shapes.push_back(input->type().shape);
  return shapes;
}

template <typename Out> Out converted(double value) { return static_cast<Out>(value); }
template <> bool converted<bool>(double value) { return value != 0.0; }
template <typename Out> Out convertedInteger(int64_t value) { return static_cast<Out>(value); }
template <> bool convertedInteger<bool>(int64_t value) { return value != 0; }

// f(a, b) over one piece of float operands, computed in double.
template <typename Out>
void floatPiece(const ir::BinaryFunction& f, const float* a, int64_t sa, const float* b, int64_t sb,
                Out* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    y[j] = converted<Out>(f.value(static_cast<double>(a[j * sa]), static_cast<double>(b[j * sb])));
  }
}

// f(a, b) over one piece of integer or bool operands, exactly. Returns false
// when a divisor is zero (those elements are left 0).
template <typename In, typename Out>
bool integerPiece(const ir::BinaryFunction& f, const In* a, int64_t sa, const In* b, int64_t sb,
                  Out* y, int64_t n) {
  bool divisorsNonZero = true;
  for (int64_t j = 0; j < n; ++j) {
    const auto bj = static_cast<int64_t>(b[j * sb]);
    if (f.dividesIntegers && bj == 0) {
      divisorsNonZero = false;
      y[j] = Out{};
      continue;
    }
    y[j] = convertedInteger<Out>(f.integerValue(static_cast<int64_t>(a[j * sa]), bj));
  }
  return divisorsNonZero;
}

template <typename In>
bool integerPieceAnyResult(const ir::BinaryFunction& f, const In* a, int64_t sa, const In* b,
                           int64_t sb, void* y, int64_t n) {
  if (f.result == ir::BinaryResult::Bool) {
    return integerPiece(f, a, sa, b, sb, static_cast<bool*>(y), n);
  }
  return integerPiece(f, a, sa, b, sb, static_cast<In*>(y), n);
}

// where: the element of a or b the condition chooses, of any element type.
template <typename T>
void wherePiece(const bool* c, int64_t sc, const T* a, int64_t sa, const T* b, int64_t sb, T* y,
                int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    y[j] = c[j * sc] ? a[j * sa] : b[j * sb];
  }
}

} // namespace

BroadcastElementwise::BroadcastElementwise(const ir::Node& node, FloatPieceLoops loops)
    : node_(node), rows_(node.output()->type().shape, inputShapes(node)), loops_(loops) {
  if (node.kind() != ir::OpKind::Where) {
    function_ = ir::findBinaryFunction(node.attrs().getString("function"));
    POPSIM_ASSERT(function_ != nullptr, node.describe(), " names no binary function.");
  }
  if (node.kind() == ir::OpKind::BinaryPointwiseGrad) {
    operand_ = node.attrs().getInt("operand");
  }
  for (size_t k = 0; k < node.inputs().size(); ++k) {
    operandBytes_[k] = ir::storageSize(node.input(k)->type().dtype);
  }
  if (node.kind() == ir::OpKind::BinaryPointwise && ir::isFloat(node.input(0)->type().dtype)) {
    fast_ = findFastBinaryPiece(function_->name);
  }
  vectorised_ = usesLoops(); // decided once: pieces can be many and short
}

bool BroadcastElementwise::usesLoops() const {
  if (function_ == nullptr || function_->formula == ir::kNoFormula) return false;
  if (node_.kind() == ir::OpKind::BinaryPointwiseGrad) return loops_.gradients != nullptr;
  return ir::isFloat(node_.input(0)->type().dtype) && fast_ == nullptr &&
         function_->result == ir::BinaryResult::Operands && loops_.values != nullptr;
}

// One piece's operands: where each starts, and its step along the row.
// (At most three operands, held in place: a piece can be a handful of
// elements, so it allocates nothing.)
struct BroadcastElementwise::Piece {
  std::array<const char*, 3> operands{};
  std::array<int64_t, 3> steps{};
  void* output;
  int64_t length;
  template <typename T> const T* operand(size_t k) const {
    return reinterpret_cast<const T*>(operands[k]);
  }
};

bool BroadcastElementwise::run(const std::vector<const void*>& inputs, void* output, int64_t first,
                               int64_t last) const {
  const size_t outputBytes = ir::storageSize(node_.output()->type().dtype);
  bool ok = true;
  for (int64_t index = first; index < last; ++index) {
    Piece piece{{},
                {},
                static_cast<char*>(output) + rows_.outputOffset(index) * outputBytes,
                rows_.length(index)};
    for (size_t k = 0; k < inputs.size(); ++k) {
      piece.operands[k] =
          static_cast<const char*>(inputs[k]) + rows_.operandOffset(index, k) * operandBytes_[k];
      piece.steps[k] = rows_.operandStep(k);
    }
    switch (node_.kind()) {
    case ir::OpKind::Where: runWhere(piece, outputBytes); break;
    case ir::OpKind::BinaryPointwiseGrad: runGradient(piece); break;
    default: ok = runValues(piece) && ok;
    }
  }
  return ok;
}

void BroadcastElementwise::runWhere(const Piece& p, size_t elementBytes) const {
  const auto* c = p.operand<bool>(0);
  switch (elementBytes) {
  case 1:
    return wherePiece(c, p.steps[0], p.operand<uint8_t>(1), p.steps[1], p.operand<uint8_t>(2),
                      p.steps[2], static_cast<uint8_t*>(p.output), p.length);
  case 4:
    return wherePiece(c, p.steps[0], p.operand<uint32_t>(1), p.steps[1], p.operand<uint32_t>(2),
                      p.steps[2], static_cast<uint32_t*>(p.output), p.length);
  default:
    return wherePiece(c, p.steps[0], p.operand<uint64_t>(1), p.steps[1], p.operand<uint64_t>(2),
                      p.steps[2], static_cast<uint64_t*>(p.output), p.length);
  }
}

void BroadcastElementwise::runGradient(const Piece& p) const {
  const auto derivative = operand_ == 0 ? function_->derivativeA : function_->derivativeB;
  const auto* dy = p.operand<float>(0);
  const auto* a = p.operand<float>(1);
  const auto* b = p.operand<float>(2);
  auto* dx = static_cast<float*>(p.output);
  if (vectorised_) {
    return loops_.gradients(function_->formula, operand_, dy, p.steps[0], a, p.steps[1], b,
                            p.steps[2], dx, p.length);
  }
  for (int64_t j = 0; j < p.length; ++j) {
    // A zero derivative masks the gradient (as PyTorch's masked_fill and where do).
    const double d = derivative(a[j * p.steps[1]], b[j * p.steps[2]]);
    dx[j] = d == 0.0 ? 0.0f : static_cast<float>(static_cast<double>(dy[j * p.steps[0]]) * d);
  }
}

bool BroadcastElementwise::runValues(const Piece& p) const {
  const auto [sa, sb] = std::pair(p.steps[0], p.steps[1]);
  switch (node_.input(0)->type().dtype) {
  case ir::DType::Float32:
  case ir::DType::Float16:
    if (fast_ != nullptr) {
      fast_(p.operand<float>(0), sa, p.operand<float>(1), sb, p.output, p.length);
    } else if (vectorised_) {
      loops_.values(function_->formula, p.operand<float>(0), sa, p.operand<float>(1), sb,
                    static_cast<float*>(p.output), p.length);
    } else if (function_->result == ir::BinaryResult::Bool) {
      floatPiece(*function_, p.operand<float>(0), sa, p.operand<float>(1), sb,
                 static_cast<bool*>(p.output), p.length);
    } else {
      floatPiece(*function_, p.operand<float>(0), sa, p.operand<float>(1), sb,
                 static_cast<float*>(p.output), p.length);
    }
    return true;
  case ir::DType::Int32:
    return integerPieceAnyResult(*function_, p.operand<int32_t>(0), sa, p.operand<int32_t>(1), sb,
                                 p.output, p.length);
  case ir::DType::Int64:
    return integerPieceAnyResult(*function_, p.operand<int64_t>(0), sa, p.operand<int64_t>(1), sb,
                                 p.output, p.length);
  case ir::DType::Bool:
    return integerPieceAnyResult(*function_, p.operand<bool>(0), sa, p.operand<bool>(1), sb,
                                 p.output, p.length);
  case ir::DType::Float64: break;
  }
  POPSIM_ASSERT(false, node_.describe(), " on float64 operands.");
}

void BroadcastElementwise::throwDivisionByZero() const {
  throwError(ErrorKind::Execution,
             std::string(function_->name) +
                 " divided an integer by zero (PyTorch raises ZeroDivisionError for it); make "
                 "the divisor non-zero, or divide float tensors (which give inf or NaN).");
}

void binaryPointwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const BroadcastElementwise op(node);
  const std::vector<const void*> in(inputs.begin(), inputs.end());
  if (!op.run(in, outputs[0], 0, op.pieces())) {
    op.throwDivisionByZero();
  }
}

} // namespace popsim::kernels::reference
