#include "python/json_objects.h"

namespace py = pybind11;

namespace popsim::python {

py::object toPython(const profile::Json& value) {
  switch (value.type()) {
  case profile::Json::value_t::null: return py::none();
  case profile::Json::value_t::boolean: return py::bool_(value.get<bool>());
  case profile::Json::value_t::number_integer: return py::int_(value.get<int64_t>());
  case profile::Json::value_t::number_unsigned: return py::int_(value.get<uint64_t>());
  case profile::Json::value_t::number_float: return py::float_(value.get<double>());
  case profile::Json::value_t::string: return py::str(value.get_ref<const std::string&>());
  case profile::Json::value_t::array: {
    py::list items;
    for (const profile::Json& item : value)
      items.append(toPython(item));
    return std::move(items);
  }
  case profile::Json::value_t::object: {
    py::dict items;
    for (const auto& [key, item] : value.items())
      items[py::str(key)] = toPython(item);
    return std::move(items);
  }
  case profile::Json::value_t::binary:
  case profile::Json::value_t::discarded: break;
  }
  throw std::logic_error("a JSON value of a kind profiles never write");
}

} // namespace popsim::python
