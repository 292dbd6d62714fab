// RESP2, the Redis protocol (https://redis.io/docs/reference/protocol-spec/), as lb needs it:
// client commands parsed in place (arrays of bulk strings, and the inline form a person types
// into telnet), backend replies framed without being decoded, and the few encodings lb
// writes itself. Pure functions over byte ranges: no I/O, no allocation beyond the caller's
// scratch vectors (which stop growing at the largest command seen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lb/runtime/byte_chain.h"
#include "lb/runtime/cache_wire.h"

namespace lb::resp {

enum class Parse : uint8_t {
  kCommand,      // one complete command: args filled, `length` bytes long
  kEmpty,        // "*0\r\n", "*-1\r\n" or an empty inline line: consume, no reply (as Redis)
  kIncomplete,   // more bytes needed: at least `need` in all, counted from the start
  kError,        // cannot be parsed; the stream cannot be resynchronised after it
};

struct Request {
  Parse status = Parse::kIncomplete;
  size_t length = 0;          // kCommand, kEmpty
  size_t need = 0;            // kIncomplete
  bool inline_form = false;   // kCommand: a line of words rather than an array
  bool too_large = false;     // kError: past max_bulk or max_args
  const char* error = "";     // kError: Redis' own wording ("Protocol error: ...")
};

// Inline commands longer than this are an error (Redis' PROTO_INLINE_MAX_SIZE).
inline constexpr size_t kMaxInlineBytes = 64 * 1024;
// The longest "*<count>\r\n" or "$<length>\r\n" line worth waiting for.
inline constexpr size_t kMaxHeaderLine = 32;

// Parses the command at the start of [p, p + n). Multibulk arguments are views into p;
// inline ones into `text` (quotes and escapes decoded as Redis' sdssplitargs does). A bulk
// longer than max_bulk or more than max_args arguments is kError with too_large.
Request parseRequest(const char* p, size_t n, size_t max_bulk, size_t max_args,
                     std::vector<std::string_view>& args, std::string& text);

// The length of the RESP2 value at the start of [p, p + n): > 0 when complete, 0 when more
// is needed (progress kept in `scan`, zero it for each new value), -1 when malformed.
int64_t scanValue(const char* p, size_t n, ReplyScan& scan) noexcept;

// Encodings lb writes.
void appendArrayHeader(ByteChain& out, size_t count);
void appendBulk(ByteChain& out, std::string_view s);
// Into a caller's buffer of at least bulkSize(s.size()) bytes; returns the length.
size_t writeBulk(char* out, std::string_view s) noexcept;
constexpr size_t bulkSize(size_t n) noexcept { return n + 24 + 4; }

// "123" -> 123; false for anything but an optional '-' and decimal digits within int64.
bool parseInteger(std::string_view s, int64_t* out) noexcept;
// ASCII case-insensitive equality with a lower-case literal.
bool equalsLower(std::string_view s, std::string_view lower) noexcept;

}  // namespace lb::resp
