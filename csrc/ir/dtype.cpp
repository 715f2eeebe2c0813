#include "ir/dtype.h"

namespace popsim::ir {

size_t elementSize(DType dtype) {
  switch (dtype) {
  case DType::Float32: return 4;
  case DType::Float16: return 2;
  case DType::Int32: return 4;
  case DType::Int64: return 8;
  case DType::Bool: return 1;
  case DType::Float64: return 8;
  }
  return 0;
}

bool isFloat(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float16; }

DType storageDType(DType dtype) { return dtype == DType::Float16 ? DType::Float32 : dtype; }

const char* dtypeName(DType dtype) {
  switch (dtype) {
  case DType::Float32: return "f32";
  case DType::Float16: return "f16";
  case DType::Int32: return "i32";
  case DType::Int64: return "i64";
  case DType::Bool: return "bool";
  case DType::Float64: return "f64";
  }
  return "?";
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (DType dtype :
       {DType::Float32, DType::Float16, DType::Int32, DType::Int64, DType::Bool, DType::Float64}) {
    if (name == dtypeName(dtype)) return dtype;
  }
  return std::nullopt;
}

} // namespace popsim::ir
