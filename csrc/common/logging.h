#pragma once

#include <optional>
#include <sstream>
#include <string_view>

namespace popsim {

// Log levels, chosen with the POPSIM_LOG_LEVEL environment variable
// (off, error, warn, info, debug, trace; default warn). Output goes to stderr.
enum class LogLevel { Trace = 0, Debug, Info, Warn, Error, Off };

// The level a lower-case name gives (off, error, ...), or nullopt.
std::optional<LogLevel> logLevelFromName(std::string_view name);
LogLevel currentLogLevel();
void setLogLevel(LogLevel level);
bool logEnabled(LogLevel level);

// Collects one message and writes it, whole, when destroyed.
class LogMessage {
public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  template <typename T> LogMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

private:
  LogLevel level_;
  std::ostringstream stream_;
};

} // namespace popsim

#define POPSIM_LOG(level)                                                                          \
  if (!::popsim::logEnabled(::popsim::LogLevel::level)) {                                          \
  } else                                                                                           \
    ::popsim::LogMessage(::popsim::LogLevel::level)
