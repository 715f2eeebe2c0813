#include "ir/ops/convolution_types.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {

// convolution(input[N, C, *spatial], weight[OC, C / groups, *kernel], bias[OC]?)
// as torch.nn.functional.conv1d/2d/3d: 1 to 3 spatial dimensions, with one
// stride, padding and dilation per spatial dimension.
std::vector<TensorType> inferConvolution(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  const TensorType& x = inputs[0];
  const TensorType& w = inputs[1];
  POPSIM_CHECK(x.rank() >= 3 && x.rank() <= 5, ErrorKind::Compilation,
               "input 0 (input) must have 3 to 5 dimensions (batch, channels and 1 to 3 spatial "
               "ones), got ",
               x.rank(), " (", x.str(), ").");
  requireRank(w, x.rank(), "input 1 (weight)");
  requireFloat(x, "input 0 (input)");
  requireFloat(w, "input 1 (weight)");
  const auto spatial = static_cast<size_t>(x.rank() - 2);
  const auto& stride = attrs.getInts("stride");
  const auto& padding = attrs.getInts("padding");
  const auto& dilation = attrs.getInts("dilation");
  requireLength(stride, spatial, "stride");
  requireLength(padding, spatial, "padding");
  requireLength(dilation, spatial, "dilation");
  const int64_t groups = attrs.getInt("groups");
  POPSIM_CHECK(groups >= 1, ErrorKind::Compilation, "groups must be at least 1, got ", groups, ".");
  const int64_t channels = x.shape[1];
  const int64_t outChannels = w.shape[0];
  POPSIM_CHECK(channels % groups == 0 && outChannels % groups == 0, ErrorKind::Compilation,
               "input channels (", channels, ") and output channels (", outChannels,
               ") must be divisible by groups (", groups, ").");
  POPSIM_CHECK(w.shape[1] * groups == channels, ErrorKind::Compilation, "weight ", w.str(),
               " expects ", w.shape[1] * groups, " input channels, but the input ", x.str(),
               " has ", channels, ".");
  if (inputs.size() == 3) {
    requireFloat(inputs[2], "input 2 (bias)");
    requireShape(inputs[2], {outChannels}, "input 2 (bias)");
  }
  Shape out = {x.shape[0], outChannels};
  for (size_t i = 0; i < spatial; ++i) {
    POPSIM_CHECK(stride[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0, ErrorKind::Compilation,
                 "stride and dilation must be >= 1 and padding >= 0, got stride ",
                 listToString(stride), ", dilation ", listToString(dilation), ", padding ",
                 listToString(padding), ".");
    const int64_t span = dilation[i] * (w.shape[2 + i] - 1) + 1;
    const int64_t padded = x.shape[2 + i] + 2 * padding[i];
    POPSIM_CHECK(padded >= span, ErrorKind::Compilation, "the kernel (", span,
                 " wide with dilation) is larger than the padded input (", padded,
                 ") in spatial dimension ", i, ".");
    out.push_back((padded - span) / stride[i] + 1);
  }
  return {{x.dtype, out}};
}

void registerConvolutionOps(OpRegistry& registry) {
  registry.add(OpKind::Convolution, 2, 3, {"input", "weight", "bias"},
               {{"stride", AttrType::Ints},
                {"padding", AttrType::Ints},
                {"dilation", AttrType::Ints},
                {"groups", AttrType::Int}},
               inferConvolution);
}

} // namespace popsim::ir::ops
