#include "ir/shape.h"

#include "common/check.h"
#include "common/strings.h"

#include <algorithm>

namespace popsim::ir {

std::optional<std::string> shapeProblem(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return strCat("dimension ", dim, " is negative");
  }
  for (int64_t dim : shape) {
    if (dim == 0) return std::nullopt;
  }
  for (int64_t dim : shape) {
    // Checked before multiplying: count * dim never overflows.
    if (dim > kMaxTensorElements / count) {
      return strCat("shape ", shapeToString(shape), " has more than 2^48 elements");
    }
    count *= dim;
  }
  return std::nullopt;
}

int64_t elementCount(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    // numel() is called often: a multiply with an overflow flag, no division.
    int64_t next = 0;
    if (dim < 0 || __builtin_mul_overflow(count, dim, &next) || next > kMaxTensorElements) {
      // The slow path, for its message (also a zero dimension after a huge one).
      const std::optional<std::string> problem = shapeProblem(shape);
      POPSIM_CHECK(!problem.has_value(), ErrorKind::InvalidInput, "a tensor's ", *problem, ".");
      return 0;
    }
    count = next;
  }
  return count;
}

std::string shapeToString(const Shape& shape) { return "[" + join(shape, ",") + "]"; }

std::vector<int64_t> contiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i > 1; --i) {
    strides[i - 2] = strides[i - 1] * shape[i - 1];
  }
  return strides;
}

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return std::nullopt;
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int64_t> normalizeDim(int64_t dim, int64_t rank) {
  const int64_t normalized = dim < 0 ? dim + rank : dim;
  if (normalized < 0 || normalized >= rank) {
    return std::nullopt;
  }
  return normalized;
}

std::vector<int64_t> inversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

} // namespace popsim::ir
