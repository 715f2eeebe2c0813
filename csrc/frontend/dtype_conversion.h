#pragma once

#include "ir/dtype.h"

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace popsim::frontend {

// The IR dtype for a torch dtype, if popsim computes with it. float64 is
// computed as float32, as PopTorch computes it (the IPU has no float64
// arithmetic; the Python side warns where a model uses it).
inline std::optional<ir::DType> toIrDType(c10::ScalarType type) {
  switch (type) {
  case c10::ScalarType::Float:
  case c10::ScalarType::Double: return ir::DType::Float32;
  case c10::ScalarType::Half: return ir::DType::Float16;
  case c10::ScalarType::Int: return ir::DType::Int32;
  case c10::ScalarType::Long: return ir::DType::Int64;
  case c10::ScalarType::Bool: return ir::DType::Bool;
  default: return std::nullopt;
  }
}

// uint8, int8 and int16: model inputs and buffers the device holds as int32
// (the importer lets only conversions, views and value-preserving ops read
// them, which the wider values compute exactly).
inline bool isWidenedOnDevice(c10::ScalarType type) {
  return type == c10::ScalarType::Byte || type == c10::ScalarType::Char ||
         type == c10::ScalarType::Short;
}

// A dtype as Python writes it (torch.bfloat16), for messages.
inline std::string pythonDTypeName(c10::ScalarType type) {
  switch (type) {
  case c10::ScalarType::Byte: return "torch.uint8";
  case c10::ScalarType::Char: return "torch.int8";
  case c10::ScalarType::Short: return "torch.int16";
  case c10::ScalarType::Int: return "torch.int32";
  case c10::ScalarType::Long: return "torch.int64";
  case c10::ScalarType::Half: return "torch.float16";
  case c10::ScalarType::Float: return "torch.float32";
  case c10::ScalarType::Double: return "torch.float64";
  case c10::ScalarType::Bool: return "torch.bool";
  case c10::ScalarType::BFloat16: return "torch.bfloat16";
  case c10::ScalarType::ComplexHalf: return "torch.complex32";
  case c10::ScalarType::ComplexFloat: return "torch.complex64";
  case c10::ScalarType::ComplexDouble: return "torch.complex128";
  case c10::ScalarType::QInt8: return "torch.qint8";
  case c10::ScalarType::QUInt8: return "torch.quint8";
  case c10::ScalarType::QInt32: return "torch.qint32";
  default: return std::string("torch ") + c10::toString(type);
  }
}

inline c10::ScalarType toTorchDType(ir::DType type) {
  switch (type) {
  case ir::DType::Float32: return c10::ScalarType::Float;
  case ir::DType::Float16: return c10::ScalarType::Half;
  case ir::DType::Int32: return c10::ScalarType::Int;
  case ir::DType::Int64: return c10::ScalarType::Long;
  case ir::DType::Bool: return c10::ScalarType::Bool;
  case ir::DType::Float64: return c10::ScalarType::Double;
  }
  return c10::ScalarType::Float;
}

} // namespace popsim::frontend
