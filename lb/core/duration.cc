#include "lb/core/duration.h"

#include <time.h>

#include <cstdint>

namespace lb {

namespace {

std::string notADuration(std::string_view text) {
  return "'" + std::string(text) + "' is not a duration (use e.g. 250ms, 2s, 1m)";
}

}  // namespace

bool parseDuration(std::string_view text, Duration* out, std::string* error) {
  if (text == "0") {
    *out = Duration{0};
    return true;
  }
  if (!text.empty() && text[0] == '-') {
    *error = "'" + std::string(text) + "': a duration cannot be negative";
    return false;
  }
  const int64_t max_ms = kMaxDuration.count();
  int64_t total_ms = 0;
  size_t i = 0;
  if (text.empty()) {
    *error = notADuration(text);
    return false;
  }
  while (i < text.size()) {
    // <digits>: bounded so that the product below cannot overflow before the range check.
    size_t digits_start = i;
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > max_ms) break;   // already too long; keep scanning digits for the message
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == digits_start) {
      *error = notADuration(text);
      return false;
    }
    // <unit>: "ms" before "m" so that 250ms is not read as 250 minutes and an 's'.
    int64_t unit_ms = 0;
    if (text.substr(i, 2) == "ms") {
      unit_ms = 1;
      i += 2;
    } else if (i < text.size() && text[i] == 's') {
      unit_ms = 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'm') {
      unit_ms = 60 * 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'h') {
      unit_ms = 3600 * 1000;
      ++i;
    } else {
      *error = notADuration(text);
      return false;
    }
    if (n > max_ms / unit_ms || total_ms + n * unit_ms > max_ms) {
      *error = "'" + std::string(text) + "' is too long (at most 8760h)";
      return false;
    }
    total_ms += n * unit_ms;
  }
  *out = Duration{total_ms};
  return true;
}

std::string formatDuration(Duration d) {
  int64_t ms = d.count();
  if (ms == 0) return "0";
  std::string out;
  const struct {
    int64_t ms;
    const char* unit;
  } kUnits[] = {{3600 * 1000, "h"}, {60 * 1000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& u : kUnits) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.unit;
      ms %= u.ms;
    }
  }
  return out;
}

int64_t wallClockMs() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace lb
