// Levelled log lines to stderr: "2026-11-29T19:49:22.123Z warn  message". Safe from any
// thread; not for the request path except at debug level behind an enabled() check.
#pragma once

#include <cstdarg>

namespace lb {

enum class LogLevel { kError, kWarn, kInfo, kDebug };

void setLogLevel(LogLevel level) noexcept;
bool logEnabled(LogLevel level) noexcept;
void logf(LogLevel level, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

#define LB_LOG(level, ...)                                   \
  do {                                                       \
    if (::lb::logEnabled(level)) ::lb::logf(level, __VA_ARGS__); \
  } while (0)
#define LB_ERROR(...) LB_LOG(::lb::LogLevel::kError, __VA_ARGS__)
#define LB_WARN(...) LB_LOG(::lb::LogLevel::kWarn, __VA_ARGS__)
#define LB_INFO(...) LB_LOG(::lb::LogLevel::kInfo, __VA_ARGS__)
#define LB_DEBUG(...) LB_LOG(::lb::LogLevel::kDebug, __VA_ARGS__)

}  // namespace lb
