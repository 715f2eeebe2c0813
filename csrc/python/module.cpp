#include "python/bindings.h"

PYBIND11_MODULE(_C, module) {
  module.doc() = "popsim core: IR, simulated IPUs and oneDNN kernels";
  popsim::python::bindErrors(module);
  popsim::python::bindLogging(module);
  popsim::python::bindIr(module);
  popsim::python::bindFrontend(module);
  popsim::python::bindOptions(module);
  popsim::python::bindSession(module);
  popsim::python::bindRuntime(module);
  popsim::python::bindDeviceProgram(module);
  popsim::python::bindProgramFiles(module);
  popsim::python::bindProfile(module);
}
