#include "frontend/tensor_conversion.h"

#include "common/check.h"
#include "frontend/dtype_conversion.h"

#include <ATen/ATen.h>

namespace popsim::frontend {

ir::TensorType typeOf(const at::Tensor& tensor, const std::string& what, bool allowFloat64) {
  std::optional<ir::DType> dtype = frontend::toIrDType(tensor.scalar_type());
  if (allowFloat64 && tensor.scalar_type() == c10::ScalarType::Double) {
    dtype = ir::DType::Float64;
  }
  POPSIM_CHECK(dtype.has_value(), ErrorKind::InvalidInput, what, " has dtype ",
               c10::toString(tensor.scalar_type()),
               "; popsim computes with float32, float16, int32, int64 and bool tensors (convert "
               "it, e.g. with .float()).");
  return {*dtype, ir::Shape(tensor.sizes().begin(), tensor.sizes().end())};
}

runtime::TensorView viewOf(const at::Tensor& tensor, const std::string& what, bool allowFloat64) {
  POPSIM_CHECK(tensor.device().is_cpu(), ErrorKind::InvalidInput, what, " is on ",
               tensor.device().str(), "; popsim takes CPU tensors.");
  POPSIM_CHECK(tensor.is_contiguous(), ErrorKind::InvalidInput, what,
               " is not contiguous (call .contiguous()).");
  const ir::TensorType type = typeOf(tensor, what, allowFloat64);
  return {tensor.data_ptr(), type.dtype, type.shape};
}

at::Tensor emptyTensor(const ir::TensorType& type) {
  return at::empty(type.shape, at::TensorOptions().dtype(frontend::toTorchDType(type.dtype)));
}

at::Tensor metaTensor(const ir::TensorType& type) {
  return at::empty(type.shape, at::TensorOptions()
                                   .dtype(frontend::toTorchDType(type.dtype))
                                   .device(c10::Device(c10::DeviceType::Meta)));
}

at::Tensor tensorOver(void* data, const ir::TensorType& type) {
  return at::from_blob(data, type.shape,
                       at::TensorOptions().dtype(frontend::toTorchDType(type.dtype)));
}

} // namespace popsim::frontend
