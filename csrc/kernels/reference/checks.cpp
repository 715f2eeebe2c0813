#include "common/check.h"
#include "kernels/reference/families.h"

#include <algorithm>
#include <cstring>

namespace popsim::kernels::reference {

// check_range: the first element outside [min, max] (or NaN) is an
// error naming its position and value; otherwise the input is copied through.
void checks(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const int64_t count = node.input(0)->type().numel();
  const double low = node.attrs().getFloat("min");
  const double high = node.attrs().getFloat("max");
  const float* bad = std::find_if(x, x + count, [&](float v) { return !(v >= low && v <= high); });
  POPSIM_CHECK(bad == x + count, ErrorKind::Execution, node.attrs().getString("what"),
               " (PyTorch raises for this too): element ", bad - x, " is ", *bad, ".");
  if (outputs[0] != inputs[0])
    std::memcpy(outputs[0], x, static_cast<size_t>(count) * sizeof(float));
}

} // namespace popsim::kernels::reference
