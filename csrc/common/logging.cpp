#include "common/logging.h"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>

namespace popsim {
namespace {

LogLevel levelFromEnvironment() {
  const char* value = std::getenv("POPSIM_LOG_LEVEL");
  return value == nullptr ? LogLevel::Warn : logLevelFromName(value).value_or(LogLevel::Warn);
}

std::atomic<LogLevel>& levelStorage() {
  static std::atomic<LogLevel> level{levelFromEnvironment()};
  return level;
}

const char* levelName(LogLevel level) {
  switch (level) {
  case LogLevel::Trace: return "trace";
  case LogLevel::Debug: return "debug";
  case LogLevel::Info: return "info";
  case LogLevel::Warn: return "warn";
  case LogLevel::Error: return "error";
  case LogLevel::Off: return "off";
  }
  return "?";
}

} // namespace

std::optional<LogLevel> logLevelFromName(std::string_view name) {
  if (name == "trace") return LogLevel::Trace;
  if (name == "debug") return LogLevel::Debug;
  if (name == "info") return LogLevel::Info;
  if (name == "warn") return LogLevel::Warn;
  if (name == "error") return LogLevel::Error;
  if (name == "off") return LogLevel::Off;
  return std::nullopt;
}

LogLevel currentLogLevel() { return levelStorage().load(); }
void setLogLevel(LogLevel level) { levelStorage().store(level); }
bool logEnabled(LogLevel level) { return level >= currentLogLevel() && level != LogLevel::Off; }

LogMessage::~LogMessage() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::cerr << "[popsim " << levelName(level_) << "] " << stream_.str() << std::endl;
}

} // namespace popsim
