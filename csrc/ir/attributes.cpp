#include "ir/attributes.h"

#include "common/check.h"

#include <algorithm>
#include <sstream>

namespace popsim::ir {

const char* attrTypeName(AttrType type) {
  switch (type) {
  case AttrType::Int: return "int";
  case AttrType::Float: return "float";
  case AttrType::Bool: return "bool";
  case AttrType::String: return "string";
  case AttrType::Ints: return "int list";
  case AttrType::Floats: return "float list";
  }
  return "?";
}

AttrType attrTypeOf(const AttrValue& value) { return static_cast<AttrType>(value.index()); }

std::string attrValueToString(const AttrValue& value) {
  std::ostringstream out;
  switch (attrTypeOf(value)) {
  case AttrType::Int: out << std::get<int64_t>(value); break;
  case AttrType::Float: {
    out.precision(9);
    out << std::get<double>(value);
    break;
  }
  case AttrType::Bool: out << (std::get<bool>(value) ? "true" : "false"); break;
  case AttrType::String: out << '"' << std::get<std::string>(value) << '"'; break;
  case AttrType::Ints: out << "[" << join(std::get<std::vector<int64_t>>(value), ",") << "]"; break;
  case AttrType::Floats: {
    out.precision(9);
    const auto& values = std::get<std::vector<double>>(value);
    out << "[";
    for (size_t i = 0; i < values.size(); ++i) {
      out << (i > 0 ? "," : "") << values[i];
    }
    out << "]";
    break;
  }
  }
  return out.str();
}

Attributes::Attributes(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  for (const auto& [name, value] : entries) {
    set(name, value);
  }
}

Attributes& Attributes::set(const std::string& name, AttrValue value) {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const auto& entry, const std::string& key) { return entry.first < key; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.insert(it, {name, std::move(value)});
  }
  return *this;
}

const AttrValue* Attributes::find(std::string_view name) const {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const auto& entry, std::string_view key) { return entry.first < key; });
  if (it != entries_.end() && it->first == name) {
    return &it->second;
  }
  return nullptr;
}

bool Attributes::has(std::string_view name) const { return find(name) != nullptr; }

template <typename T> const T& Attributes::get(std::string_view name, AttrType expected) const {
  const AttrValue* value = find(name);
  POPSIM_ASSERT(value != nullptr, "attribute '", name, "' is missing.");
  POPSIM_ASSERT(attrTypeOf(*value) == expected, "attribute '", name, "' is a ",
                attrTypeName(attrTypeOf(*value)), ", expected ", attrTypeName(expected), ".");
  return std::get<T>(*value);
}

int64_t Attributes::getInt(std::string_view name) const {
  return get<int64_t>(name, AttrType::Int);
}
double Attributes::getFloat(std::string_view name) const {
  return get<double>(name, AttrType::Float);
}
bool Attributes::getBool(std::string_view name) const { return get<bool>(name, AttrType::Bool); }
const std::string& Attributes::getString(std::string_view name) const {
  return get<std::string>(name, AttrType::String);
}
const std::vector<int64_t>& Attributes::getInts(std::string_view name) const {
  return get<std::vector<int64_t>>(name, AttrType::Ints);
}
const std::vector<double>& Attributes::getFloats(std::string_view name) const {
  return get<std::vector<double>>(name, AttrType::Floats);
}

} // namespace popsim::ir
