#include "kernels/reference/binary_pointwise.h"

#include "common/check.h"
#include "kernels/reference/families.h"

#include <cmath>
#include <string>

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

BroadcastElementwise::BroadcastElementwise(const ir::Node& node)
    : node_(node), rows_(node.output()->type().shape, inputShapes(node)) {
  if (node.kind() != ir::OpKind::Where) {
    function_ = ir::findBinaryFunction(node.attrs().getString("function"));
    POPSIM_ASSERT(function_ != nullptr, node.describe(), " names no binary function.");
  }
  if (node.kind() == ir::OpKind::BinaryPointwiseGrad) {
    operand_ = node.attrs().getInt("operand");
  }
  if (node.kind() == ir::OpKind::BinaryPointwise &&
      node.input(0)->type().dtype == ir::DType::Float32) {
    fast_ = findFastBinaryPiece(function_->name);
  }
}

bool BroadcastElementwise::run(const std::vector<const void*>& inputs, void* output, int64_t first,
                               int64_t last) const {
  const ir::DType dtype = node_.input(node_.kind() == ir::OpKind::Where ? 1 : 0)->type().dtype;
  const size_t elementBytes = ir::elementSize(node_.output()->type().dtype);
  bool ok = true;
  for (int64_t piece = first; piece < last; ++piece) {
    const int64_t n = rows_.length(piece);
    void* y = static_cast<char*>(output) + rows_.outputOffset(piece) * elementBytes;
    const auto at = [&](size_t k) {
      return static_cast<const char*>(inputs[k]) +
             rows_.operandOffset(piece, k) * ir::elementSize(node_.input(k)->type().dtype);
    };
    const auto step = [&](size_t k) { return rows_.operandStep(k); };
    switch (node_.kind()) {
    case ir::OpKind::Where: {
      const auto* c = reinterpret_cast<const bool*>(at(0));
      switch (elementBytes) {
      case 1:
        wherePiece(c, step(0), reinterpret_cast<const uint8_t*>(at(1)), step(1),
                   reinterpret_cast<const uint8_t*>(at(2)), step(2), static_cast<uint8_t*>(y), n);
        break;
      case 4:
        wherePiece(c, step(0), reinterpret_cast<const uint32_t*>(at(1)), step(1),
                   reinterpret_cast<const uint32_t*>(at(2)), step(2), static_cast<uint32_t*>(y), n);
        break;
      default:
        wherePiece(c, step(0), reinterpret_cast<const uint64_t*>(at(1)), step(1),
                   reinterpret_cast<const uint64_t*>(at(2)), step(2), static_cast<uint64_t*>(y), n);
      }
      break;
    }
    case ir::OpKind::BinaryPointwiseGrad: {
      const auto derivative = operand_ == 0 ? function_->derivativeA : function_->derivativeB;
      const auto* dy = reinterpret_cast<const float*>(at(0));
      const auto* a = reinterpret_cast<const float*>(at(1));
      const auto* b = reinterpret_cast<const float*>(at(2));
      auto* dx = static_cast<float*>(y);
      for (int64_t j = 0; j < n; ++j) {
        // A zero derivative masks the gradient (as PyTorch's masked_fill and where do).
        const double d = derivative(a[j * step(1)], b[j * step(2)]);
        dx[j] = d == 0.0 ? 0.0f : static_cast<float>(static_cast<double>(dy[j * step(0)]) * d);
      }
      break;
    }
    default: { // BinaryPointwise
      const bool toBool = function_->result == ir::BinaryResult::Bool;
      switch (dtype) {
      case ir::DType::Float32: {
        const auto* a = reinterpret_cast<const float*>(at(0));
        const auto* b = reinterpret_cast<const float*>(at(1));
        if (fast_ != nullptr) {
          fast_(a, step(0), b, step(1), y, n);
        } else if (toBool) {
          floatPiece(*function_, a, step(0), b, step(1), static_cast<bool*>(y), n);
        } else {
          floatPiece(*function_, a, step(0), b, step(1), static_cast<float*>(y), n);
        }
        break;
      }
      case ir::DType::Int32:
        ok &= integerPieceAnyResult(*function_, reinterpret_cast<const int32_t*>(at(0)), step(0),
                                    reinterpret_cast<const int32_t*>(at(1)), step(1), y, n);
        break;
      case ir::DType::Int64:
        ok &= integerPieceAnyResult(*function_, reinterpret_cast<const int64_t*>(at(0)), step(0),
                                    reinterpret_cast<const int64_t*>(at(1)), step(1), y, n);
        break;
      case ir::DType::Bool:
        ok &= integerPieceAnyResult(*function_, reinterpret_cast<const bool*>(at(0)), step(0),
                                    reinterpret_cast<const bool*>(at(1)), step(1), y, n);
        break;
      case ir::DType::Float64: POPSIM_ASSERT(false, node_.describe(), " on float64 operands.");
      }
    }
    }
  }
  return ok;
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
