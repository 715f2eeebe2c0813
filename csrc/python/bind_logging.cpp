#include "common/logging.h"
#include "python/bindings.h"

#include <string>

namespace py = pybind11;

namespace popsim::python {

void bindLogging(py::module_& module) {
  module.def(
      "set_log_level",
      [](const std::string& name) {
        const std::optional<LogLevel> level = logLevelFromName(name);
        if (!level.has_value()) {
          throw py::value_error("unknown log level '" + name +
                                "': expected trace, debug, info, warn, error or off");
        }
        setLogLevel(*level);
      },
      py::arg("level"), "Sets the C++ core's log level (as POPSIM_LOG_LEVEL does at start-up).");
}

} // namespace popsim::python
