#pragma once

#include <pybind11/pybind11.h>

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

} // namespace popsim::python
