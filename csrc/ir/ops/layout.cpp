#include "ir/ops/gradient_helpers.h"
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

// slice_grad(dY) -> zeros of input_shape with dY where the slice came from.
std::vector<TensorType> inferSliceGrad(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const Shape& shape = attrs.getInts("input_shape");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(static_cast<int64_t>(shape.size()) == inputs[0].rank() && dim >= 0 &&
                   dim < inputs[0].rank(),
               ErrorKind::Compilation, "input_shape ", shapeToString(shape),
               " does not fit grad_output ", inputs[0].str(), " at dim ", dim, ".");
  return {{inputs[0].dtype, shape}};
}

// broadcast(X) -> X broadcast to `shape` (NumPy rules).
std::vector<TensorType> inferBroadcast(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const Shape& shape = attrs.getInts("shape");
  auto broadcast = broadcastShapes(inputs[0].shape, shape);
  POPSIM_CHECK(broadcast.has_value() && *broadcast == shape, ErrorKind::Compilation,
               inputs[0].str(), " does not broadcast to ", shapeToString(shape), ".");
  return {{inputs[0].dtype, shape}};
}

// A cast between float types passes the gradient back in its input's dtype
// (so a float16 input's gradient is rounded to float16); from integers and
// bools no gradient flows.
Grads castGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  const ir::DType from = in(b, 0)->type().dtype;
  if (!ir::isFloat(from)) return none(b);
  return {b.emit(OpKind::Cast, {g[0]}, {{"dtype", std::string(ir::dtypeName(from))}})};
}

Grads reshapeGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.reshape(g[0], in(b, 0)->type().shape)};
}

Grads permuteGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  const auto& perm = nodeOf(b).attrs().getInts("perm");
  return {b.emit(OpKind::Permute, {g[0]}, {{"perm", inversePermutation(perm)}})};
}

Grads sliceGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Attributes a = copyAttrs(nodeOf(b).attrs(), {"dim", "start", "end", "step"});
  a.set("input_shape", in(b, 0)->type().shape);
  return {b.emit(OpKind::SliceGrad, {g[0]}, a)};
}

// The input's gradient is the output's with the overwritten slice zeroed;
// the update's is that slice of the output's.
Grads sliceUpdateGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  const Attributes a = copyAttrs(nodeOf(b).attrs(), {"dim", "start", "end", "step"});
  Grads result = none(b);
  if (needed[0]) {
    result[0] = b.emit(OpKind::SliceUpdate, {g[0], b.zeros(in(b, 1)->type().shape)}, a);
  }
  if (needed[1]) {
    result[1] = b.emit(OpKind::Slice, {g[0]}, a);
  }
  return result;
}

// overwrite(x, v): the gradient goes to x only, as if the write had not happened.
Grads overwriteGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Grads result = none(b);
  result[0] = g[0];
  return result;
}

Grads concatGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const int64_t dim = nodeOf(b).attrs().getInt("dim");
  int64_t start = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    const int64_t size = in(b, i)->type().shape[static_cast<size_t>(dim)];
    if (needed[i]) {
      result[i] =
          b.emit(OpKind::Slice, {g[0]},
                 {{"dim", dim}, {"start", start}, {"end", start + size}, {"step", int64_t{1}}});
    }
    start += size;
  }
  return result;
}

Grads broadcastGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.sumToShape(g[0], in(b, 0)->type().shape)};
}

// A conversion per element, on the tiles that hold them (float32 vector
// width).
OpWork castWork(const Node& node) {
  OpWork work;
  work.vectorPasses = 1;
  work.vectorElements = static_cast<uint64_t>(node.output()->type().numel());
  return work;
}

// Over the IPU-Links between two IPUs; the receiving IPU waits for it.
OpWork ipuCopyWork(const Node& node) {
  OpWork work;
  work.linkTransfer = true;
  work.linkBytes = node.output()->type().bytes();
  return work;
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
  // Copies of (parts of) their inputs.
  for (OpKind kind : {OpKind::Permute, OpKind::Slice, OpKind::Concat, OpKind::Broadcast})
    registry.setSelectsInputValues(kind);
  registry.add(OpKind::SliceGrad, 1, 1, {"grad_output"},
               {{"input_shape", AttrType::Ints},
                {"dim", AttrType::Int},
                {"start", AttrType::Int},
                {"end", AttrType::Int},
                {"step", AttrType::Int}},
               inferSliceGrad);
  registry.add(OpKind::Broadcast, 1, 1, {"input"}, {{"shape", AttrType::Ints}}, inferBroadcast);
  registry.setGradient(OpKind::Cast, castGradient);
  registry.setGradient(OpKind::Reshape, reshapeGradient);
  registry.setGradient(OpKind::Permute, permuteGradient);
  registry.setGradient(OpKind::Slice, sliceGradient);
  registry.setGradient(OpKind::SliceUpdate, sliceUpdateGradient);
  registry.setGradient(OpKind::Overwrite, overwriteGradient);
  registry.setGradient(OpKind::Concat, concatGradient);
  registry.setGradient(OpKind::Broadcast, broadcastGradient);
  registry.setWork(OpKind::Permute, work::movement);
  registry.setWork(OpKind::Slice, work::movement);
  registry.setWork(OpKind::SliceUpdate, work::movement);
  registry.setWork(OpKind::Concat, work::movement);
  registry.setWork(OpKind::Overwrite, work::movement);
  registry.setWork(OpKind::SliceGrad, work::movement);
  registry.setWork(OpKind::Broadcast, work::movement);
  registry.setWork(OpKind::Cast, castWork);
  registry.setWork(OpKind::IpuCopy, ipuCopyWork);
}

} // namespace popsim::ir::ops
