#pragma once

#include "ir/tensor_type.h"

#include <pybind11/pybind11.h>

#include <vector>

// One function per area of the popsim._C module.
namespace popsim::python {

void bindErrors(pybind11::module_& module);
void bindLogging(pybind11::module_& module);
void bindIr(pybind11::module_& module);
void bindFrontend(pybind11::module_& module);
void bindOptions(pybind11::module_& module);
void bindSession(pybind11::module_& module);
void bindRuntime(pybind11::module_& module);
void bindProfile(pybind11::module_& module);
void bindDeviceProgram(pybind11::module_& module);
void bindProgramFiles(pybind11::module_& module);

// A Python object that C++ keeps (a callback, a subclass of a bound class),
// released with the GIL held whichever thread lets it go.
struct PythonFunction {
  pybind11::object function;
  ~PythonFunction() {
    pybind11::gil_scoped_acquire gil;
    function = pybind11::object();
  }
};

// Host types as Python sees them: a list of (dtype name, shape) tuples.
pybind11::list typesList(const std::vector<ir::TensorType>& types);

} // namespace popsim::python
