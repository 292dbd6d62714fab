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

#include "lb/proxy/cache/byte_chain.h"
#include "lb/proxy/cache/wire.h"

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
  char got = 0;               // kError "expected '$'": the byte found instead (Redis names it)
};

// Inline commands longer than this are an error (Redis' PROTO_INLINE_MAX_SIZE).
inline constexpr size_t kMaxInlineBytes = 64 * 1024;
// What a client that has not authenticated may send before Redis 7.0 refuses it and closes
// (networking.c processMultibulkBuffer: authRequired() and a count > 10 or a bulk > 16384).
inline constexpr int64_t kUnauthMaxArgs = 10;
inline constexpr int64_t kUnauthMaxBulk = 16384;
// The longest "*<count>\r\n" or "$<length>\r\n" line worth waiting for.
inline constexpr size_t kMaxHeaderLine = 32;

// How far a multibulk command still arriving has been read and checked, so that each read
// scans only the bytes it brought (an MGET of 10,000 keys comes in many reads). Offsets from
// the command's start; parseRequest zeroes it whenever it returns anything but kIncomplete.
struct RequestProgress {
  size_t pos = 0;     // 0: nothing read yet; else the end of the last complete bulk read
  int64_t left = 0;   // bulks still to come after pos
};

// Parses the command at the start of [p, p + n) exactly as Redis 7.0 reads one
// (networking.c processMultibulkBuffer / processInlineBuffer) or refuses it: lengths in
// string2ll's canonical form only, inline words split as sdssplitargs splits them (quotes and
// escapes decoded), and an inline line with a NUL byte refused (Redis' C-string reader would
// stop there and wait). Multibulk arguments are views into p; inline ones into `text`. A bulk
// longer than max_bulk or more than max_args arguments is kError with too_large; a client
// not `authenticated` gets Redis' unauthenticated limits. `progress`, when given, carries the
// scan of an incomplete multibulk command from one call to the next.
Request parseRequest(const char* p, size_t n, size_t max_bulk, size_t max_args,
                     std::vector<std::string_view>& args, std::string& text,
                     bool authenticated = true, RequestProgress* progress = nullptr);

// The one command a hot-key load is made of, recognised without the general parse: when
// [p, p + n) starts with a complete `GET key` array in the canonical encoding
// ("*2\r\n$3\r\nGET\r\n$<len>\r\n<key>\r\n", GET in any case, <len> in parseInteger's
// form and at most max_bulk), its length, the key in *key (a view into p); else 0, and
// parseRequest decides (an incomplete or odd GET is its to read or refuse). What it matches,
// parseRequest reads identically for an authenticated client with max_args >= 2: kCommand,
// args {GET, key}, this length (tests/fuzz/resp_fuzz.cc checks it).
size_t matchGet(const char* p, size_t n, size_t max_bulk, std::string_view* key) noexcept;

// The bytes lb sends a backend for a command parseRequest returned: a multibulk command as
// it came (the parse accepts only the canonical encoding, so those bytes are it), an inline
// one re-encoded as an array of the arguments lb decoded, never the line itself (a backend's
// inline reader is not lb's). Pure over the chain.
void appendCommand(ByteChain& out, std::string_view raw, bool inline_form,
                   const std::vector<std::string_view>& args);

// The length of the RESP2 value at the start of [p, p + n): > 0 when complete, 0 when more
// is needed (progress kept in `scan`, zero it for each new value), -1 when it is not a value
// a Redis server writes: a simple string or error line holding a CR or LF, an integer,
// bulk length or array count not in parseInteger's form (or below -1), a bulk not followed
// by CRLF, or a type byte other than RESP2's + - : $ *.
int64_t scanValue(const char* p, size_t n, ReplyScan& scan) noexcept;

// Encodings lb writes.
void appendArrayHeader(ByteChain& out, size_t count);
void appendBulk(ByteChain& out, std::string_view s);
// Into a caller's buffer of at least bulkSize(s.size()) bytes; returns the length.
size_t writeBulk(char* out, std::string_view s) noexcept;
constexpr size_t bulkSize(size_t n) noexcept { return n + 24 + 4; }

// "123" -> 123, as Redis' string2ll (util.c) reads it: an optional '-', then "0" alone or a
// digit 1-9 and more digits, within int64 and under 21 bytes; no '+', no leading zero, no
// "-0", nothing else. Lengths, counts and integer replies are all read with it.
bool parseInteger(std::string_view s, int64_t* out) noexcept;
// ASCII case-insensitive equality with a lower-case literal.
bool equalsLower(std::string_view s, std::string_view lower) noexcept;

}  // namespace lb::resp
