#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace popsim::ir {

using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

enum class AttrType { Int, Float, Bool, String, Ints, Floats };
const char* attrTypeName(AttrType type);
AttrType attrTypeOf(const AttrValue& value);
// Printer form: 3, 0.5, true, "tanh", [1,1], [0.5,6].
std::string attrValueToString(const AttrValue& value);

// Named compile-time parameters of an op (stride, dim, eps, ...). Kept sorted
// by name so that printing, comparing and hashing are deterministic.
class Attributes {
public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, AttrValue>> entries);

  Attributes& set(const std::string& name, AttrValue value);
  bool has(std::string_view name) const;
  const AttrValue* find(std::string_view name) const;

  // Typed getters throw an internal error naming the attribute when it is
  // missing or has another type (the verifier catches both earlier).
  int64_t getInt(std::string_view name) const;
  double getFloat(std::string_view name) const;
  bool getBool(std::string_view name) const;
  const std::string& getString(std::string_view name) const;
  const std::vector<int64_t>& getInts(std::string_view name) const;
  const std::vector<double>& getFloats(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& entries() const { return entries_; }
  bool operator==(const Attributes& other) const { return entries_ == other.entries_; }

private:
  template <typename T> const T& get(std::string_view name, AttrType expected) const;
  std::vector<std::pair<std::string, AttrValue>> entries_;
};

} // namespace popsim::ir
