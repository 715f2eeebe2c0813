#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/tensor_text.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <mutex>

namespace popsim::kernels::reference {
namespace {

// check_range: the first element outside [min, max] (or NaN) is an
// error naming its position and value; otherwise the input (or, given two,
// the second) is copied through.
template <typename T>
void checkRangeOf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const T*>(inputs[0]);
  const int64_t count = node.input(0)->type().numel();
  const double low = node.attrs().getFloat("min");
  const double high = node.attrs().getFloat("max");
  const T* bad = std::find_if(x, x + count, [&](T v) {
    const double value = static_cast<double>(v);
    return !(value >= low && value <= high);
  });
  POPSIM_CHECK(bad == x + count, ErrorKind::Execution, node.attrs().getString("what"), ": element ",
               bad - x, " is ", *bad, ".");
  const size_t passed = node.inputs().size() - 1;
  if (outputs[0] != inputs[passed]) {
    std::memcpy(outputs[0], inputs[passed],
                static_cast<size_t>(node.input(passed)->type().storageBytes()));
  }
}

void checkRange(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.input(0)->type().dtype) {
  case ir::DType::Int64: return checkRangeOf<int64_t>(node, inputs, outputs);
  case ir::DType::Int32: return checkRangeOf<int32_t>(node, inputs, outputs);
  default: return checkRangeOf<float>(node, inputs, outputs);
  }
}

template <typename T> std::vector<double> asDoubles(const void* data, int64_t count) {
  const auto* values = static_cast<const T*>(data);
  return std::vector<double>(values, values + count);
}

// print_tensor: "title: (...)" on stderr, where Poplar prints, one whole tensor at a time
// (IPUs run concurrently), then the input copied through.
void printTensor(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::TensorType& type = node.input(0)->type();
  const int64_t count = type.numel();
  std::vector<double> values;
  switch (type.dtype) {
  case ir::DType::Float32:
  case ir::DType::Float16: values = asDoubles<float>(inputs[0], count); break;
  case ir::DType::Int32: values = asDoubles<int32_t>(inputs[0], count); break;
  case ir::DType::Int64: values = asDoubles<int64_t>(inputs[0], count); break;
  default: values = asDoubles<bool>(inputs[0], count); break;
  }
  const ir::Attributes& a = node.attrs();
  TensorTextFormat format;
  format.summariseThreshold = a.getInt("summarise_threshold");
  format.edgeItems = a.getInt("edge_items");
  format.maxLineWidth = a.getInt("max_line_width");
  format.digits = a.getInt("digits");
  format.floatFormat = a.getString("float_format");
  format.separator = a.getString("separator");
  format.openBracket = a.getString("open_bracket");
  format.closeBracket = a.getString("close_bracket");
  const std::string text = tensorText(values, type.shape, !ir::isFloat(type.dtype), format);
  const std::string& title = a.getString("title");
  {
    static std::mutex mutex;
    const std::lock_guard<std::mutex> lock(mutex);
    std::cerr << (title.empty() ? text : title + ": " + text) << std::endl;
  }
  if (outputs[0] != inputs[0]) {
    std::memcpy(outputs[0], inputs[0], static_cast<size_t>(type.storageBytes()));
  }
}

} // namespace

void checks(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.kind() == ir::OpKind::PrintTensor) return printTensor(node, inputs, outputs);
  checkRange(node, inputs, outputs);
}

} // namespace popsim::kernels::reference
