#pragma once

#include "profile/json.h"

#include <pybind11/pybind11.h>

namespace popsim::python {

// A JSON value as the Python objects json.loads would give (dicts keep their
// keys' order), without a round trip through text.
pybind11::object toPython(const profile::Json& value);

} // namespace popsim::python
