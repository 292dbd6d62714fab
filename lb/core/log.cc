#include "lb/core/log.h"

#include <sys/time.h>

#include <atomic>
#include <cstdio>
#include <ctime>

namespace lb {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
constexpr const char* kLevelNames[] = {"error", "warn ", "info ", "debug"};
}  // namespace

void setLogLevel(LogLevel level) noexcept { g_level.store(static_cast<int>(level)); }

bool logEnabled(LogLevel level) noexcept {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void logf(LogLevel level, const char* fmt, ...) noexcept {
  char line[1024];
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  gmtime_r(&tv.tv_sec, &t);
  int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s ", t.tm_year + 1900,
                   t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                   static_cast<int>(tv.tv_usec / 1000), kLevelNames[static_cast<int>(level)]);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
  va_end(ap);
  size_t len = n + (m < 0 ? 0 : (static_cast<size_t>(m) < sizeof line - n - 1 ? m : sizeof line - n - 2));
  line[len++] = '\n';
  fwrite(line, 1, len, stderr);   // one write per line: lines from threads do not interleave
}

}  // namespace lb
