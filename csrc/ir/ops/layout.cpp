#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

#include <algorithm>

namespace popsim::ir::ops {
namespace {

// reshape to an explicit shape with the same number of elements (a view).
std::vector<TensorType> inferReshape(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  const Shape& shape = attrs.getInts("shape");
  for (int64_t dim : shape) {
    POPSIM_CHECK(dim >= 0, ErrorKind::Compilation, "target shape ", shapeToString(shape),
                 " has a negative dimension (the frontend resolves -1).");
  }
  POPSIM_CHECK(elementCount(shape) == inputs[0].numel(), ErrorKind::Compilation, "cannot reshape ",
               inputs[0].str(), " (", inputs[0].numel(), " elements) to ", shapeToString(shape),
               " (", elementCount(shape), " elements).");
  return {{inputs[0].dtype, shape}};
}

// permute: output dimension i is input dimension perm[i].
std::vector<TensorType> inferPermute(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  const TensorType& x = inputs[0];
  const auto& perm = attrs.getInts("perm");
  POPSIM_CHECK(static_cast<int64_t>(perm.size()) == x.rank(), ErrorKind::Compilation, "perm ",
               listToString(perm), " has ", perm.size(), " entries for an input of rank ", x.rank(),
               ".");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < x.rank(); ++i) {
    POPSIM_CHECK(sorted[i] == i, ErrorKind::Compilation, "perm ", listToString(perm),
                 " is not a permutation of 0..", x.rank() - 1, ".");
  }
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = x.shape[perm[i]];
  }
  return {{x.dtype, out}};
}

// slice(dim, start, end, step) with 0 <= start <= end <= size (normalised by the frontend).
std::vector<TensorType> inferSlice(const std::vector<TensorType>& inputs, const Attributes& attrs) {
  const TensorType& x = inputs[0];
  const int64_t dim = attrs.getInt("dim");
  const int64_t start = attrs.getInt("start");
  const int64_t end = attrs.getInt("end");
  const int64_t step = attrs.getInt("step");
  POPSIM_CHECK(dim >= 0 && dim < x.rank(), ErrorKind::Compilation, "dim ", dim,
               " is out of range for ", x.str(), ".");
  POPSIM_CHECK(step >= 1, ErrorKind::Compilation, "step must be >= 1, got ", step, ".");
  POPSIM_CHECK(0 <= start && start <= end && end <= x.shape[dim], ErrorKind::Compilation, "range [",
               start, ", ", end, ") is not within dimension ", dim, " of size ", x.shape[dim], ".");
  Shape out = x.shape;
  out[dim] = (end - start + step - 1) / step;
  return {{x.dtype, out}};
}

// slice_update(X, U): X with the slice (dim, start, end, step) replaced by U,
// which has the slice's type (an in-place write through a view, made functional).
std::vector<TensorType> inferSliceUpdate(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  const TensorType slice = inferSlice({inputs[0]}, attrs)[0];
  POPSIM_CHECK(inputs[1] == slice, ErrorKind::Compilation, "input 1 (update) ", inputs[1].str(),
               " does not match the slice ", slice.str(), " of ", inputs[0].str(), ".");
  return {inputs[0]};
}

// cast(X) -> X's values as `dtype`, with PyTorch's conversions.
std::vector<TensorType> inferCast(const std::vector<TensorType>& inputs, const Attributes& attrs) {
  const std::string& name = attrs.getString("dtype");
  const std::optional<DType> dtype = dtypeFromName(name);
  POPSIM_CHECK(dtype.has_value() && *dtype != DType::Float64, ErrorKind::Compilation,
               "cannot cast to '", name, "'; the dtypes are f32, i32, i64 and bool.");
  return {{*dtype, inputs[0].shape}};
}

// concat along `dim`; all inputs agree on every other dimension and on dtype.
std::vector<TensorType> inferConcat(const std::vector<TensorType>& inputs,
                                    const Attributes& attrs) {
  const TensorType& first = inputs[0];
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < first.rank(), ErrorKind::Compilation, "dim ", dim,
               " is out of range for ", first.str(), ".");
  Shape out = first.shape;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& other = inputs[i];
    bool compatible = other.dtype == first.dtype && other.rank() == first.rank();
    for (int64_t d = 0; compatible && d < first.rank(); ++d) {
      compatible = d == dim || other.shape[d] == first.shape[d];
    }
    POPSIM_CHECK(compatible, ErrorKind::Compilation, "input ", i, " ", other.str(),
                 " does not match input 0 ", first.str(), " outside dimension ", dim, ".");
    out[dim] += other.shape[dim];
  }
  return {{first.dtype, out}};
}

} // namespace

void registerLayoutOps(OpRegistry& registry) {
  registry.add(OpKind::Reshape, 1, 1, {"input"}, {{"shape", AttrType::Ints}}, inferReshape);
  registry.add(OpKind::Permute, 1, 1, {"input"}, {{"perm", AttrType::Ints}}, inferPermute);
  registry.add(OpKind::Slice, 1, 1, {"input"},
               {{"dim", AttrType::Int},
                {"start", AttrType::Int},
                {"end", AttrType::Int},
                {"step", AttrType::Int}},
               inferSlice);
  registry.add(OpKind::SliceUpdate, 2, 2, {"input", "update"},
               {{"dim", AttrType::Int},
                {"start", AttrType::Int},
                {"end", AttrType::Int},
                {"step", AttrType::Int}},
               inferSliceUpdate);
  registry.add(OpKind::Concat, 1, -1, {}, {{"dim", AttrType::Int}}, inferConcat);
  const auto sameType = [](const std::vector<TensorType>& inputs, const Attributes&) {
    return std::vector<TensorType>{inputs[0]};
  };
  // A copy of a value onto another IPU (its placement says which).
  registry.add(OpKind::IpuCopy, 1, 1, {"input"}, {}, sameType);
  // overwrite(X, V) -> V's values, with the gradient going to X as if V had
  // not been written: an in-place write autograd does not record (under
  // torch.no_grad(), or through a detached view).
  registry.add(OpKind::Overwrite, 2, 2, {"input", "value"}, {},
               [](const std::vector<TensorType>& inputs, const Attributes&) {
                 requireShape(inputs[1], inputs[0].shape, "input 1 (value)");
                 requireDType(inputs[1], inputs[0].dtype, "input 1 (value)");
                 return std::vector<TensorType>{inputs[0]};
               });
  registry.add(OpKind::Cast, 1, 1, {"input"}, {{"dtype", AttrType::String}}, inferCast);
  // The input's value, through which no gradient flows (detach, no_grad regions).
  registry.add(OpKind::StopGradient, 1, 1, {"input"}, {}, sameType);
  // A reshape of a contiguous tensor and a gradient barrier move no bytes.
  registry.setView(OpKind::Reshape);
  registry.setView(OpKind::StopGradient);
}

} // namespace popsim::ir::ops
