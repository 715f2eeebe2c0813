#include "kernels/reference/tensor_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace popsim::kernels::reference {
namespace {

// Each dimension's printed positions: all of them, or the edge items around
// a gap (-1) when the tensor is summarised.
std::vector<std::vector<int64_t>> shownPositions(const std::vector<int64_t>& shape, int64_t numel,
                                                 const TensorTextFormat& format) {
  const bool summarise = format.summariseThreshold > 0 && numel > format.summariseThreshold;
  std::vector<std::vector<int64_t>> shown;
  for (int64_t size : shape) {
    std::vector<int64_t> positions;
    if (summarise && size > 2 * format.edgeItems) {
      for (int64_t i = 0; i < format.edgeItems; ++i)
        positions.push_back(i);
      positions.push_back(-1);
      for (int64_t i = size - format.edgeItems; i < size; ++i)
        positions.push_back(i);
    } else {
      for (int64_t i = 0; i < size; ++i)
        positions.push_back(i);
    }
    shown.push_back(std::move(positions));
  }
  return shown;
}

std::string printed(const char* pattern, int precision, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), pattern, precision, value);
  return buffer;
}

// "fixed" or "scientific" for "auto": fixed while the shown values' range
// suits `digits` decimals, as NumPy decides.
std::string resolvedFormat(const std::vector<double>& shown, const TensorTextFormat& format) {
  if (format.floatFormat != "auto") return format.floatFormat;
  double largest = 0.0, smallest = INFINITY;
  for (double v : shown) {
    if (!std::isfinite(v) || v == 0.0) continue;
    largest = std::max(largest, std::abs(v));
    smallest = std::min(smallest, std::abs(v));
  }
  const bool fixed =
      largest < 1e8 && (smallest == INFINITY || smallest >= 1e-4 || largest / smallest < 1e3);
  return fixed ? "fixed" : "scientific";
}

// The decimals that show `digits` significant digits of the largest shown
// value in fixed notation (Poplar's digits count significant figures: 8
// digits print 1.4962566), and never fewer than none.
int fixedDecimals(const std::vector<double>& shown, int64_t digits) {
  double largest = 0.0;
  for (double v : shown) {
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  }
  const int integerDigits =
      largest >= 1.0 ? static_cast<int>(std::floor(std::log10(largest))) + 1 : 1;
  return std::max(0, static_cast<int>(digits) - integerDigits);
}

std::string elementText(double value, bool integral, const std::string& floatFormat, int64_t digits,
                        int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (integral) return printed("%.*f", 0, value);
  if (digits == 0 || floatFormat == "none") return printed("%.*g", 6, value);
  if (floatFormat == "fixed") return printed("%.*f", decimals, value);
  return printed("%.*e", std::max(0, static_cast<int>(digits) - 1), value);
}

class Writer {
public:
  Writer(const std::vector<double>& values, const std::vector<int64_t>& shape, bool integral,
         const TensorTextFormat& format)
      : values_(values), shape_(shape), format_(format),
        shown_(shownPositions(shape, static_cast<int64_t>(values.size()), format)) {
    strides_.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
      strides_[d - 1] = strides_[d] * shape[d];
    std::vector<double> visible;
    collect(0, 0, visible);
    const std::string floatFormat = resolvedFormat(visible, format);
    const int decimals = fixedDecimals(visible, format.digits);
    for (double v : visible)
      texts_.push_back(elementText(v, integral, floatFormat, format.digits, decimals));
    if (format.digits > 0) {
      for (const std::string& text : texts_)
        width_ = std::max(width_, text.size());
    }
  }

  std::string text() {
    next_ = 0;
    return block(0);
  }

private:
  void collect(size_t dim, int64_t offset, std::vector<double>& out) const {
    if (dim == shape_.size()) {
      out.push_back(values_[static_cast<size_t>(offset)]);
      return;
    }
    for (int64_t position : shown_[dim])
      if (position >= 0) collect(dim + 1, offset + position * strides_[dim], out);
  }

  std::string aligned(const std::string& text) const {
    return std::string(width_ > text.size() ? width_ - text.size() : 0, ' ') + text;
  }

  // Dimension `dim` onwards at nesting depth `dim`, laid out as Poplar prints:
  // an outer dimension opens its bracket, puts each sub-block on a line of its
  // own indented one space per depth, and closes on a line of its own; the
  // innermost dimension is one row, broken after a separator where the next
  // element would pass the line width.
  std::string block(size_t dim) {
    if (dim == shape_.size()) return aligned(texts_[next_++]); // a 0-d tensor
    if (dim + 1 == shape_.size()) return row(dim);
    std::string out = format_.openBracket + "\n";
    for (int64_t position : shown_[dim]) {
      out += indent(dim + 1) + (position < 0 ? std::string("...") : block(dim + 1)) + "\n";
    }
    return out + indent(dim) + format_.closeBracket;
  }

  std::string row(size_t dim) {
    std::string out = format_.openBracket;
    // Continued lines start one column after the row's first element.
    const std::string continued(dim + format_.openBracket.size() + 1, ' ');
    size_t lineLength = dim + format_.openBracket.size();
    bool first = true;
    for (int64_t position : shown_[dim]) {
      const std::string item = position < 0 ? std::string("...") : aligned(texts_[next_++]);
      if (!first) {
        if (format_.maxLineWidth > 0 && static_cast<int64_t>(lineLength + format_.separator.size() +
                                                             item.size()) > format_.maxLineWidth) {
          out += rstrip(format_.separator) + "\n" + continued;
          lineLength = continued.size();
        } else {
          out += format_.separator;
          lineLength += format_.separator.size();
        }
      }
      out += item;
      lineLength += item.size();
      first = false;
    }
    return out + format_.closeBracket;
  }

  static std::string indent(size_t depth) { return std::string(depth, ' '); }

  static std::string rstrip(const std::string& text) {
    const size_t end = text.find_last_not_of(' ');
    return end == std::string::npos ? std::string() : text.substr(0, end + 1);
  }

  const std::vector<double>& values_;
  const std::vector<int64_t>& shape_;
  const TensorTextFormat& format_;
  std::vector<std::vector<int64_t>> shown_;
  std::vector<int64_t> strides_;
  std::vector<std::string> texts_;
  size_t width_ = 0;
  size_t next_ = 0;
};

} // namespace

std::string tensorText(const std::vector<double>& values, const std::vector<int64_t>& shape,
                       bool integral, const TensorTextFormat& format) {
  return Writer(values, shape, integral, format).text();
}

} // namespace popsim::kernels::reference
