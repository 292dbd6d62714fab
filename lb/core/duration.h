// Durations as the config writes them: "250ms", "2s", "1m", "1h", or a sum such as "1m30s"
// (Go's time.ParseDuration notation, which Envoy, Prometheus and most operators already
// read fluently). Integers only: "1.5s" is written "1500ms".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace lb {

using Duration = std::chrono::milliseconds;

// The longest duration accepted: one year. Far beyond any timeout or cookie TTL, and small
// enough that milliseconds never overflow.
inline constexpr Duration kMaxDuration{365LL * 24 * 3600 * 1000};

// Parses `text` into *out. Accepts one or more <digits><unit> groups with unit ms, s, m or h,
// and "0" alone. On failure returns false and sets *error to a message that quotes the text
// and says what to write instead ("'2x' is not a duration (use e.g. 250ms, 2s, 1m)").
// Pure; any thread.
bool parseDuration(std::string_view text, Duration* out, std::string* error);

// The shortest text parseDuration reads back as `d`: "0", "250ms", "1m30s", "2h".
std::string formatDuration(Duration d);

// Now on the wall clock, in milliseconds since the Unix epoch (CLOCK_REALTIME_COARSE: a few
// milliseconds' resolution, and no system call, so the request path may ask).
int64_t wallClockMs() noexcept;

}  // namespace lb
