// memcached's text protocol (doc/protocol.txt of memcached 1.6), as lb needs it: client
// commands parsed in place (the classic commands and the meta commands), backend replies
// framed by the kind of command they answer, and memcached's own key rules. Pure functions
// over byte ranges; the caller's token vector stops growing at the longest line seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lb/proxy/cache/wire.h"

namespace lb::mc {

enum class Command : uint8_t {
  kGet, kGets, kGat, kGats,                              // many keys: merged
  kSet, kAdd, kReplace, kAppend, kPrepend, kCas,         // a data block follows
  kDelete, kIncr, kDecr, kTouch,
  kMetaGet, kMetaSet, kMetaDelete, kMetaArithmetic, kMetaDebug,   // mg ms md ma me
  kMetaNoop,                                             // mn: answered by lb
  kVersion, kQuit,                                       // answered by lb
  kFlushAll, kVerbosity,                                 // every server (fanout), else refused
  kRefused,                                              // a whole-server command
  kUnknown,
};

enum class Parse : uint8_t {
  kCommand,      // complete, data block included
  kIncomplete,   // at least `need` bytes (from the start) are needed
  kError,        // answer `error`; then drop `length` bytes plus `skip` more and go on,
                 // or close when `close`
  kBinary,       // the binary protocol's magic byte (0x80): refused, then closed
};

struct Request {
  Parse status = Parse::kIncomplete;
  Command command = Command::kUnknown;
  size_t length = 0;          // kCommand: line and data block; kError: the bytes to consume
  size_t need = 0;            // kIncomplete
  size_t line = 0;            // the command line's length, its "\r\n" included
  size_t data = 0;            // kCommand: where the data block starts (storage, ms)
  size_t data_length = 0;     // kCommand: the data block, its "\r\n" included
  size_t skip = 0;            // kError: a data block to drop after `length`
  bool close = false;         // kError: the stream cannot be resynchronised
  bool noreply = false;       // classic commands: the last token is "noreply" (kError too:
                              // memcached then sends nothing, not even the error)
  bool quiet = false;         // meta commands: the q flag (a token starting with q)
  bool base64_key = false;    // meta commands: the b flag (the key is base64)
  bool value = false;         // meta commands: the v flag
  bool line_missing = false;  // kIncomplete: no end of line yet (all of it was searched)
  size_t first_key = 1;       // index of the first key among the tokens
  const char* error = "";     // kError: the whole reply line, "\r\n" included
};

// memcached's limits: a key is 1..250 bytes with no control characters and no space.
inline constexpr size_t kMaxKeyLength = 250;
bool validKey(std::string_view key) noexcept;
// memcached 1.6 closes a connection whose line runs past 2048 bytes without a newline,
// unless it is a get or gets (proto_text.c, try_read_command_ascii).
inline constexpr size_t kMaxLine = 2048;

// The fields of a command line, as plain decimal digits (a '-' first for a signed one)
// within memcached's types: a data block's length (int, at most INT_MAX - 2), client flags
// (32-bit unsigned), an exptime (32-bit signed), a cas unique or a delta (64-bit unsigned).
bool parseLength(std::string_view s, size_t* out) noexcept;
bool parseU32(std::string_view s) noexcept;
bool parseI32(std::string_view s) noexcept;
bool parseU64(std::string_view s) noexcept;

// Parses the command at the start of [p, p + n); tokens (the words of its line) are views
// into p. `scanned` is how much of [p, p + n) is already known to hold no newline (a long
// line arriving in pieces is then searched once). A data block longer than max_bytes, a
// line longer than kMaxLine (max_bytes for get, gets, gat, gats) or more than max_keys keys
// are errors.
Request parseRequest(const char* p, size_t n, size_t max_bytes, size_t max_keys,
                     std::vector<std::string_view>& tokens, size_t scanned = 0);

// How a backend reply is framed, by the command it answers: only the replies that command
// can produce, or an error line (ERROR, CLIENT_ERROR ..., SERVER_ERROR ...), which any can.
enum ReplyKind : uint8_t {
  kReplyValues = 1,      // get, gets, gat, gats: VALUE items, then END
  kReplyStore = 2,       // STORED, NOT_STORED, EXISTS, NOT_FOUND
  kReplyDelete = 3,      // DELETED, NOT_FOUND
  kReplyArithmetic = 4,  // incr, decr: the new value (decimal), NOT_FOUND
  kReplyTouch = 5,       // TOUCHED, NOT_FOUND
  kReplyMeta = 6,        // ms, md: HD, NS, EX, NF, each with returned flags after a space
  kReplyMetaValue = 7,   // mg, ma: the same, EN, or "VA <size> <flags>*" and a data block
  kReplyMetaDebug = 8,   // me: "ME <key> <k=v>*", EN
  kReplyOk = 9,          // flush_all: OK
};
uint8_t replyKindOf(Command c) noexcept;
// The length of the reply at the start of [p, p + n): > 0 complete, 0 incomplete (progress
// in `scan`), -1 when it is not a reply of that kind (or a line runs past kMaxLine).
int64_t scanReply(uint8_t kind, const char* p, size_t n, ReplyScan& scan) noexcept;
// "ERROR", "CLIENT_ERROR ..." or "SERVER_ERROR ...".
bool isErrorReply(const char* p, size_t n) noexcept;
// The VALUE item at the start of [p, p + n) (a complete reply to a get): its key and its
// length, line and data block included; false when [p, p + n) does not start with one.
bool valueItem(const char* p, size_t n, std::string_view* key, size_t* length) noexcept;

// The binary protocol's refusal: a response header (magic 0x81) echoing the request's
// opcode and opaque, status 0x0083 "not supported", with `message` as its body. Returns the
// bytes written to `out` (24 + message; out holds at least that).
size_t binaryRefusal(const unsigned char* request24, std::string_view message,
                     char* out) noexcept;

// Decodes a base64 key (meta commands' b flag) into out (kMaxKeyLength bytes at least);
// returns its length, or 0 when it is not valid base64 or decodes to more than that.
size_t decodeBase64Key(std::string_view in, char* out) noexcept;

}  // namespace lb::mc
