#include "ir/tensor_type.h"

namespace popsim::ir {

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeToString(shape); }

} // namespace popsim::ir
