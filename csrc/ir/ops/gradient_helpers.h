#pragma once

#include "ir/gradient_builder.h"

#include <initializer_list>
#include <string>
#include <vector>

// What the op families' gradient rules share: short names for the forward
// node being differentiated and its operands, results and attributes.
namespace popsim::ir::ops {

using Grads = std::vector<Value*>;
using Needed = std::vector<bool>;

inline const Node& nodeOf(GradientBuilder& b) { return b.forward(); }
inline Value* in(GradientBuilder& b, size_t i) { return nodeOf(b).input(i); }
inline Value* out(GradientBuilder& b, size_t i = 0) { return nodeOf(b).output(i); }
// No gradient for any input.
inline Grads none(GradientBuilder& b) { return Grads(nodeOf(b).inputs().size(), nullptr); }

// `value` in `dtype` (a cast when it has another).
inline Value* asDType(GradientBuilder& b, Value* value, DType dtype) {
  if (value->type().dtype == dtype) return value;
  return b.emit(OpKind::Cast, {value}, {{"dtype", std::string(dtypeName(dtype))}});
}

inline Attributes copyAttrs(const Attributes& from, std::initializer_list<const char*> names) {
  Attributes attrs;
  for (const char* name : names) {
    attrs.set(name, *from.find(name));
  }
  return attrs;
}

inline std::vector<int64_t> allDimsExcept(int64_t rank, int64_t kept) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != kept) dims.push_back(d);
  }
  return dims;
}

} // namespace popsim::ir::ops
