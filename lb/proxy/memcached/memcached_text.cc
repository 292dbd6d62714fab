// Request lines, read as memcached 1.6.18 reads them (proto_text.c) but stricter: lb forwards
// a command only once every field of its line is one memcached reads the same way, and only
// in the canonical form memcached_forward.h writes. Numbers are plain decimal digits (memcached's
// strtoul would also take "+5", "-0" or a trailing tab); every byte of a line is printable.
#include "lb/proxy/memcached/memcached_text.h"

#include <charconv>
#include <climits>
#include <cstring>

#include "lb/core/base64.h"

namespace lb::mc {

namespace {

constexpr const char* kError = "ERROR\r\n";
constexpr const char* kBadFormat = "CLIENT_ERROR bad command line format\r\n";
constexpr const char* kBadChunk = "CLIENT_ERROR bad data chunk\r\n";
constexpr const char* kTooLarge = "SERVER_ERROR object too large for cache\r\n";
constexpr const char* kLineTooLong = "CLIENT_ERROR line too long\r\n";
constexpr const char* kTooManyKeys = "CLIENT_ERROR too many keys\r\n";

struct Name {
  std::string_view text;
  Command command;
};

constexpr Name kNames[] = {
    {"get", Command::kGet},          {"gets", Command::kGets},
    {"gat", Command::kGat},          {"gats", Command::kGats},
    {"set", Command::kSet},          {"add", Command::kAdd},
    {"replace", Command::kReplace},  {"append", Command::kAppend},
    {"prepend", Command::kPrepend},  {"cas", Command::kCas},
    {"delete", Command::kDelete},    {"incr", Command::kIncr},
    {"decr", Command::kDecr},        {"touch", Command::kTouch},
    {"mg", Command::kMetaGet},       {"ms", Command::kMetaSet},
    {"md", Command::kMetaDelete},    {"ma", Command::kMetaArithmetic},
    {"me", Command::kMetaDebug},     {"mn", Command::kMetaNoop},
    {"version", Command::kVersion},  {"quit", Command::kQuit},
    // Whole-server commands: refused by the session, with the reason.
    {"stats", Command::kRefused},    {"flush_all", Command::kFlushAll},
    {"verbosity", Command::kVerbosity}, {"slabs", Command::kRefused},
    {"lru", Command::kRefused},      {"lru_crawler", Command::kRefused},
    {"watch", Command::kRefused},    {"shutdown", Command::kRefused},
    {"cache_memlimit", Command::kRefused}, {"misbehave", Command::kRefused},
    {"debugtime", Command::kRefused}, {"extstore", Command::kRefused},
};

Command commandOf(std::string_view name) noexcept {
  for (const Name& n : kNames)
    if (n.text == name) return n.command;
  return Command::kUnknown;
}

Request incomplete(size_t need) {
  Request r;
  r.status = Parse::kIncomplete;
  r.need = need;
  return r;
}

void tokenize(std::string_view line, std::vector<std::string_view>& tokens) {
  tokens.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) tokens.emplace_back(line.data() + start, i - start);
  }
}

bool isStorage(Command c) noexcept {
  return c == Command::kSet || c == Command::kAdd || c == Command::kReplace ||
         c == Command::kAppend || c == Command::kPrepend || c == Command::kCas;
}

// memcached 1.6 (try_read_command_ascii) keeps reading a line past 2048 bytes only when it
// starts (after at most 100 spaces) with "get " or "gets "; lb lets gat and gats run as long.
bool longLineAllowed(const char* p, size_t n) noexcept {
  size_t i = 0;
  while (i < n && i <= 100 && p[i] == ' ') ++i;
  const std::string_view s(p + i, n - i);
  return s.starts_with("get ") || s.starts_with("gets ") || s.starts_with("gat ") ||
         s.starts_with("gats ");
}

template <class T>
bool digits(std::string_view s, T* out) noexcept {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Meta flags as memcached 1.6.18's _meta_flag_preparse reads them: by their first character,
// each at most once, the numeric ones in full. `start` is the first flag token. nullptr when
// they are good; else memcached's own error line for them (clients match these words): a
// duplicate or unknown flag ends the reading at once, any other bad flag leaves its word
// and reading goes on, so the last such word stands, as in memcached.
const char* metaFlagsError(Command c, const std::vector<std::string_view>& tokens,
                           size_t start, Request& r) noexcept {
  // proto_text.c: "options flags are too long" past MFLAG_MAX_OPT_LENGTH (20) tokens,
  // counting its terminal token (mg says "are too long", ms, md and ma "too long").
  if (tokens.size() + 1 > 20)
    return c == Command::kMetaGet ? "CLIENT_ERROR options flags are too long\r\n"
                                  : "CLIENT_ERROR options flags too long\r\n";
  constexpr const char* kBadToken = "CLIENT_ERROR bad token in command line format\r\n";
  const char* error = nullptr;
  bool seen[128] = {};
  for (size_t i = start; i < tokens.size(); ++i) {
    const std::string_view t = tokens[i];
    const unsigned char o = static_cast<unsigned char>(t[0]);
    if (o >= 127 || seen[o]) return "CLIENT_ERROR duplicate flag\r\n";
    seen[o] = true;
    const std::string_view v = t.substr(1);
    switch (o) {
      case 'b': r.base64_key = true; break;
      case 'q': r.quiet = true; break;
      case 'v':
        r.value = true;
        break;
      case 'N': case 'T': case 'R':
        if (!parseI32(v)) error = kBadToken;
        break;
      case 'F':
        if (!parseU32(v)) error = kBadFormat;   // memcached sets no word of its own here
        break;
      case 'C':
        if (!parseU64(v)) error = kBadToken;
        break;
      case 'J':
        if (!parseU64(v)) error = "CLIENT_ERROR invalid numeric initial value\r\n";
        break;
      case 'D':
        if (!parseU64(v)) error = "CLIENT_ERROR invalid numeric delta value\r\n";
        break;
      case 'M':
        if (t.size() != 2) error = "CLIENT_ERROR incorrect length for M token\r\n";
        break;
      case 'O':
      case 'l': case 'P': case 'L': case 'k': case 's': case 't': case 'c': case 'f':
      case 'h': case 'u': case 'I':
        break;
      default:
        return "CLIENT_ERROR invalid flag\r\n";
    }
  }
  if (error != nullptr) return error;
  // After the flags read, each command checks its own (process_mset_command and the rest).
  for (size_t i = start; i < tokens.size(); ++i) {
    const std::string_view t = tokens[i];
    if (t[0] == 'O' && t.size() > 32)   // MFLAG_MAX_OPAQUE_LENGTH, the O counted
      return "CLIENT_ERROR opaque token too long\r\n";
    if (t[0] != 'M') continue;
    if (c == Command::kMetaSet && std::string_view("EAPRS").find(t[1]) == std::string_view::npos)
      return "CLIENT_ERROR invalid mode for ms M token\r\n";
    if (c == Command::kMetaArithmetic && std::string_view("I+D-").find(t[1]) == std::string_view::npos)
      return "CLIENT_ERROR invalid mode for ma M token\r\n";
  }
  return nullptr;
}

}  // namespace

bool validKey(std::string_view key) noexcept {
  if (key.empty() || key.size() > kMaxKeyLength) return false;
  for (unsigned char c : key)
    if (c <= ' ' || c == 0x7f) return false;
  return true;
}

bool parseLength(std::string_view s, size_t* out) noexcept {
  uint32_t v = 0;
  if (s.size() > 10 || !digits(s, &v) || v > INT_MAX - 2) return false;
  *out = v;
  return true;
}

bool parseU32(std::string_view s) noexcept {
  uint32_t v;
  return digits(s, &v);
}

bool parseI32(std::string_view s) noexcept {
  const std::string_view d = s.starts_with('-') ? s.substr(1) : s;
  if (d.empty() || d[0] < '0' || d[0] > '9') return false;
  int32_t v;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parseU64(std::string_view s) noexcept {
  uint64_t v;
  return digits(s, &v);
}

Request parseRequest(const char* p, size_t n, size_t max_bytes, size_t max_keys,
                     std::vector<std::string_view>& tokens, size_t scanned) {
  tokens.clear();
  if (n == 0) return incomplete(1);
  if (static_cast<unsigned char>(p[0]) == 0x80) {
    if (n < 24) return incomplete(24);
    Request r;
    r.status = Parse::kBinary;
    r.length = 24;
    return r;
  }
  // A line that cannot end within its limit is answered and the connection closed, as
  // memcached closes it: nothing after it can be read as a command.
  const size_t max_line = longLineAllowed(p, n) ? max_bytes : kMaxLine;
  const size_t from = scanned < n ? scanned : n;
  const size_t limit = n < max_line ? n : max_line;
  const void* nl = from < limit ? memchr(p + from, '\n', limit - from) : nullptr;
  Request r;
  auto fail = [&r](const char* text, size_t length, size_t skip = 0, bool close = false) {
    r.status = Parse::kError;
    r.error = text;
    r.length = length;
    r.skip = skip;
    r.close = close;
    return r;
  };
  if (nl == nullptr) {
    if (n >= max_line) return fail(kLineTooLong, n, 0, true);
    Request more = incomplete(n + 1);
    more.line_missing = true;
    return more;
  }
  r.line = static_cast<size_t>(static_cast<const char*>(nl) - p) + 1;
  std::string_view text(p, r.line - 1);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  tokenize(text, tokens);
  if (tokens.empty()) return fail(kError, r.line);
  r.command = commandOf(tokens[0]);
  const size_t count = tokens.size();
  // Classic commands whose last token is "noreply" are noreply even when the line is bad:
  // memcached's set_noreply_maybe runs first, and its errors then go unsent too.
  if (isStorage(r.command) || r.command == Command::kDelete || r.command == Command::kIncr ||
      r.command == Command::kDecr || r.command == Command::kTouch)
    r.noreply = count > 2 && tokens.back() == "noreply";
  // The whole-server commands memcached reads noreply on (set_noreply_maybe in each of their
  // process_*_command): lb's refusal of them is then unsent too.
  if (r.command == Command::kFlushAll || r.command == Command::kVerbosity ||
      (r.command == Command::kRefused &&
       (tokens[0] == "cache_memlimit" || tokens[0] == "slabs" ||
        tokens[0] == "watch" || tokens[0] == "lru" || tokens[0] == "extstore")))
    r.noreply = count > 1 && tokens.back() == "noreply";
  bool printable = true;
  for (unsigned char c : text)
    if (c < ' ' || c == 0x7f) printable = false;
  switch (r.command) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats: {
      if (!printable) return fail(kBadFormat, r.line);
      const bool touch = r.command == Command::kGat || r.command == Command::kGats;
      r.first_key = touch ? 2 : 1;
      if (count <= r.first_key) return fail(kError, r.line);
      if (touch && !parseI32(tokens[1])) return fail(kBadFormat, r.line);
      if (count - r.first_key > max_keys) return fail(kTooManyKeys, r.line);
      for (size_t i = r.first_key; i < count; ++i)
        if (!validKey(tokens[i])) return fail(kBadFormat, r.line);
      break;
    }
    case Command::kSet:
    case Command::kAdd:
    case Command::kReplace:
    case Command::kAppend:
    case Command::kPrepend:
    case Command::kCas: {
      // <cmd> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply]
      // A bad field must not let the data block run as a command: memcached answers
      // "CLIENT_ERROR bad command line format" and reads the block as the next line
      // (process_update_command returns before conn_swallow), which is how a client would
      // smuggle a command past lb. So when the byte count reads, lb drops the block with
      // the line (the client meant it as data); when it does not, nothing after the line
      // can be placed, and lb closes, as nutcracker does on any parse error.
      const size_t base = r.command == Command::kCas ? 6 : 5;
      size_t vlen = 0;
      if (count < 5 || !parseLength(tokens[4], &vlen)) return fail(kBadFormat, r.line, 0, true);
      const size_t block = vlen + 2;
      if (count != base + (r.noreply ? 1 : 0)) return fail(kError, r.line, block);
      if (vlen > max_bytes) return fail(kTooLarge, r.line, block);
      if (!printable || !validKey(tokens[1]) || !parseU32(tokens[2]) || !parseI32(tokens[3]) ||
          (base == 6 && !parseU64(tokens[5])))
        return fail(kBadFormat, r.line, block);
      r.data = r.line;
      r.data_length = block;
      r.length = r.line + block;
      if (r.length > n) return incomplete(r.length);
      if (p[r.line + vlen] != '\r' || p[r.line + vlen + 1] != '\n')
        return fail(kBadChunk, r.length);
      break;
    }
    case Command::kDelete: {
      // delete <key> [0] [noreply]: memcached 1.6 process_delete_command takes a hold time
      // of "0" only.
      const size_t extra = count - 2 - (r.noreply ? 1 : 0);
      if (count < 2 || count > 4) return fail(kError, r.line);
      if (!printable || !validKey(tokens[1]) || extra > 1 || (extra == 1 && tokens[2] != "0"))
        return fail(kBadFormat, r.line);
      break;
    }
    case Command::kIncr:
    case Command::kDecr:
    case Command::kTouch: {
      // incr/decr <key> <delta: 64-bit unsigned> [noreply]; touch <key> <exptime> [noreply]
      if (count != 3 + (r.noreply ? 1u : 0u)) return fail(kError, r.line);
      // memcached's own words for a bad number (process_touch_command,
      // process_arithmetic_command): clients match them.
      const bool touch = r.command == Command::kTouch;
      if (!printable || !validKey(tokens[1])) return fail(kBadFormat, r.line);
      if (touch && !parseI32(tokens[2]))
        return fail("CLIENT_ERROR invalid exptime argument\r\n", r.line);
      if (!touch && !parseU64(tokens[2]))
        return fail("CLIENT_ERROR invalid numeric delta argument\r\n", r.line);
      break;
    }
    case Command::kMetaGet:
    case Command::kMetaSet:
    case Command::kMetaDelete:
    case Command::kMetaArithmetic: {
      // <cmd> <key> [<datalen> (ms)] <flags>*
      const bool set = r.command == Command::kMetaSet;
      if (count < (set ? 3u : 2u)) return fail(kError, r.line);
      size_t vlen = 0;
      // ms: memcached reads the data length first and swallows the block on any later
      // error (process_mset_command's error label); without one, lb closes.
      if (set && !parseLength(tokens[2], &vlen)) return fail(kBadFormat, r.line, 0, true);
      const size_t block = set ? vlen + 2 : 0;
      if (set && vlen > max_bytes) return fail(kTooLarge, r.line, block);
      if (!printable || tokens[1].size() > kMaxKeyLength) return fail(kBadFormat, r.line, block);
      if (const char* e = metaFlagsError(r.command, tokens, set ? 3 : 2, r))
        return fail(e, r.line, block);
      char decoded[kMaxKeyLength];
      const bool key_ok = r.base64_key ? decodeBase64Key(tokens[1], decoded) > 0
                                       : validKey(tokens[1]);
      if (!key_ok) return fail(kBadFormat, r.line, block);
      if (set) {
        r.data = r.line;
        r.data_length = block;
        r.length = r.line + block;
        if (r.length > n) return incomplete(r.length);
        if (p[r.line + vlen] != '\r' || p[r.line + vlen + 1] != '\n')
          return fail(kBadChunk, r.length);
      }
      break;
    }
    case Command::kMetaDebug: {
      // me <key> [b]: memcached's process_meta_command reads nothing else (a b flag only as
      // the exact third token); lb takes exactly that.
      if (count < 2) return fail(kError, r.line);
      r.base64_key = count == 3 && tokens[2] == "b";
      if (!printable || count > 3 || (count == 3 && !r.base64_key)) return fail(kBadFormat, r.line);
      char decoded[kMaxKeyLength];
      const bool key_ok = r.base64_key ? decodeBase64Key(tokens[1], decoded) > 0
                                       : validKey(tokens[1]);
      if (!key_ok) return fail(kBadFormat, r.line);
      break;
    }
    case Command::kFlushAll: {
      // flush_all [delay] [noreply] (process_flush_all_command); more is memcached's ERROR.
      const size_t fields = count - (r.noreply ? 1 : 0);
      if (count > 3 || fields > 2) return fail(kError, r.line);
      if (fields == 2 && !parseI32(tokens[1]))
        return fail("CLIENT_ERROR invalid exptime argument\r\n", r.line);
      break;
    }
    case Command::kVerbosity:
      // verbosity <level> [noreply] (process_verbosity_command); other counts are ERROR.
      if (count < 2 || count > 3 || (count == 3 && !r.noreply)) return fail(kError, r.line);
      if (!parseU32(tokens[1])) return fail(kBadFormat, r.line);
      break;
    case Command::kMetaNoop:
    case Command::kVersion:
    case Command::kQuit:
    case Command::kRefused:
      break;
    case Command::kUnknown:
      return fail(kError, r.line);
  }
  if (!isStorage(r.command) && r.command != Command::kMetaSet) r.length = r.line;
  r.status = Parse::kCommand;
  return r;
}

uint8_t replyKindOf(Command c) noexcept {
  switch (c) {
    case Command::kGet: case Command::kGets: case Command::kGat: case Command::kGats:
      return kReplyValues;
    case Command::kSet: case Command::kAdd: case Command::kReplace: case Command::kAppend:
    case Command::kPrepend: case Command::kCas:
      return kReplyStore;
    case Command::kDelete: return kReplyDelete;
    case Command::kIncr: case Command::kDecr: return kReplyArithmetic;
    case Command::kTouch: return kReplyTouch;
    case Command::kMetaGet: case Command::kMetaArithmetic: return kReplyMetaValue;
    case Command::kMetaDebug: return kReplyMetaDebug;
    default: return kReplyMeta;   // ms, md
  }
}

size_t binaryRefusal(const unsigned char* req, std::string_view message, char* out) noexcept {
  unsigned char* h = reinterpret_cast<unsigned char*>(out);
  memset(h, 0, 24);
  h[0] = 0x81;          // response magic
  h[1] = req[1];        // opcode
  h[6] = 0x00;
  h[7] = 0x83;          // status: not supported
  const uint32_t body = static_cast<uint32_t>(message.size());
  h[8] = static_cast<unsigned char>(body >> 24);
  h[9] = static_cast<unsigned char>(body >> 16);
  h[10] = static_cast<unsigned char>(body >> 8);
  h[11] = static_cast<unsigned char>(body);
  memcpy(h + 12, req + 12, 4);   // opaque
  memcpy(out + 24, message.data(), message.size());
  return 24 + message.size();
}

size_t decodeBase64Key(std::string_view in, char* out) noexcept {
  if (in.empty() || in.size() % 4 != 0) return 0;
  size_t len = 0;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + j];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        v[j] = 0;
        ++pad;
      } else {
        if (pad > 0) return 0;
        v[j] = base64SymbolValue(c);
        if (v[j] < 0) return 0;
      }
    }
    const uint32_t word = (static_cast<uint32_t>(v[0]) << 18) | (static_cast<uint32_t>(v[1]) << 12) |
                          (static_cast<uint32_t>(v[2]) << 6) | static_cast<uint32_t>(v[3]);
    const int bytes = 3 - pad;
    for (int j = 0; j < bytes; ++j) {
      if (len == kMaxKeyLength) return 0;
      out[len++] = static_cast<char>((word >> (16 - 8 * j)) & 0xff);
    }
  }
  return len;
}

}  // namespace lb::mc
