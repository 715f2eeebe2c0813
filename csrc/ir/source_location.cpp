#include "ir/source_location.h"

namespace popsim::ir {

std::string SourceLocation::str() const {
  if (!known()) {
    return "<unknown location>";
  }
  return file + ":" + std::to_string(line);
}

std::string SourceLocation::shortStr() const {
  if (!known()) {
    return "<unknown location>";
  }
  const size_t slash = file.find_last_of('/');
  const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  return base + ":" + std::to_string(line);
}

} // namespace popsim::ir
