#include "common/logging.h"
#include "python/bindings.h"

#include <string>

namespace py = pybind11;

namespace popsim::python {

void bindLogging(py::module_& module) {
  module.def(
      "set_log_level",
      [](const std::string& name) {
        static const std::pair<const char*, LogLevel> kLevels[] = {
            {"trace", LogLevel::Trace}, {"debug", LogLevel::Debug}, {"info", LogLevel::Info},
            {"warn", LogLevel::Warn},   {"error", LogLevel::Error}, {"off", LogLevel::Off}};
        for (const auto& [levelName, level] : kLevels) {
          if (name == levelName) return setLogLevel(level);
        }
        throw py::value_error("unknown log level '" + name +
                              "': expected trace, debug, info, warn, error or off");
      },
      py::arg("level"), "Sets the C++ core's log level (as POPSIM_LOG_LEVEL does at start-up).");
}

} // namespace popsim::python
