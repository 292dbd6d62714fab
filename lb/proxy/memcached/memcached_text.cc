#include "lb/proxy/memcached/memcached_text.h"

#include <charconv>
#include <climits>
#include <cstring>

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
    {"stats", Command::kRefused},    {"flush_all", Command::kRefused},
    {"verbosity", Command::kRefused}, {"slabs", Command::kRefused},
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

Request error(const char* text, size_t length, size_t skip = 0, bool close = false) {
  Request r;
  r.status = Parse::kError;
  r.error = text;
  r.length = length;
  r.skip = skip;
  r.close = close;
  return r;
}

// memcached's safe_strtoul for a length: decimal digits only, within int.
bool parseLength(std::string_view s, size_t* out) noexcept {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v > INT_MAX - 2) return false;
  *out = static_cast<size_t>(v);
  return true;
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

}  // namespace

bool validKey(std::string_view key) noexcept {
  if (key.empty() || key.size() > kMaxKeyLength) return false;
  for (unsigned char c : key)
    if (c <= ' ' || c == 0x7f) return false;
  return true;
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
  const size_t max_line = max_bytes;
  const size_t from = scanned < n ? scanned : n;
  const size_t limit = n < max_line ? n : max_line;
  const void* nl = from < limit ? memchr(p + from, '\n', limit - from) : nullptr;
  if (nl == nullptr) {
    if (n >= max_line) return error(kLineTooLong, n, 0, true);
    Request r = incomplete(n + 1);
    r.line_missing = true;
    return r;
  }
  Request r;
  r.line = static_cast<size_t>(static_cast<const char*>(nl) - p) + 1;
  std::string_view text(p, r.line - 1);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  tokenize(text, tokens);
  if (tokens.empty()) return error(kError, r.line);
  r.command = commandOf(tokens[0]);
  const size_t count = tokens.size();
  switch (r.command) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats: {
      const bool touch = r.command == Command::kGat || r.command == Command::kGats;
      r.first_key = touch ? 2 : 1;
      if (count <= r.first_key) return error(kError, r.line);
      if (count - r.first_key > max_keys) return error(kTooManyKeys, r.line);
      for (size_t i = r.first_key; i < count; ++i)
        if (!validKey(tokens[i])) return error(kBadFormat, r.line);
      break;
    }
    case Command::kSet:
    case Command::kAdd:
    case Command::kReplace:
    case Command::kAppend:
    case Command::kPrepend:
    case Command::kCas: {
      // <cmd> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply]
      const size_t base = r.command == Command::kCas ? 6 : 5;
      if (count != base && count != base + 1) return error(kError, r.line);
      if (count == base + 1 && tokens.back() != "noreply") return error(kError, r.line);
      r.noreply = count == base + 1;
      size_t vlen = 0;
      if (!parseLength(tokens[4], &vlen)) return error(kBadFormat, r.line);
      // The length is known: a refused command's data block is dropped, so the next line
      // is read as a command (memcached itself swallows it for a too-large item).
      if (vlen > max_bytes) return error(kTooLarge, r.line, vlen + 2);
      if (!validKey(tokens[1])) return error(kBadFormat, r.line, vlen + 2);
      r.data = r.line;
      r.data_length = vlen + 2;
      r.length = r.line + vlen + 2;
      if (r.length > n) return incomplete(r.length);
      if (p[r.line + vlen] != '\r' || p[r.line + vlen + 1] != '\n')
        return error(kBadChunk, r.length);
      break;
    }
    case Command::kDelete:
      if (count < 2 || count > 4) return error(kError, r.line);
      if (!validKey(tokens[1])) return error(kBadFormat, r.line);
      r.noreply = tokens.back() == "noreply" && count > 2;
      break;
    case Command::kIncr:
    case Command::kDecr:
    case Command::kTouch:
      if (count != 3 && count != 4) return error(kError, r.line);
      if (count == 4 && tokens.back() != "noreply") return error(kError, r.line);
      if (!validKey(tokens[1])) return error(kBadFormat, r.line);
      r.noreply = count == 4;
      break;
    case Command::kMetaGet:
    case Command::kMetaSet:
    case Command::kMetaDelete:
    case Command::kMetaArithmetic:
    case Command::kMetaDebug: {
      const bool set = r.command == Command::kMetaSet;
      if (count < (set ? 3u : 2u)) return error(kError, r.line);
      for (size_t i = set ? 3 : 2; i < count; ++i) {
        if (tokens[i] == "q") r.quiet = true;
        if (tokens[i] == "b") r.base64_key = true;
      }
      size_t vlen = 0;
      if (set && !parseLength(tokens[2], &vlen)) return error(kBadFormat, r.line);
      if (set && vlen > max_bytes) return error(kTooLarge, r.line, vlen + 2);
      char decoded[kMaxKeyLength];
      const bool key_ok = r.base64_key ? decodeBase64Key(tokens[1], decoded) > 0
                                       : validKey(tokens[1]);
      if (!key_ok) return error(kBadFormat, r.line, set ? vlen + 2 : 0);
      if (set) {
        r.data = r.line;
        r.data_length = vlen + 2;
        r.length = r.line + vlen + 2;
        if (r.length > n) return incomplete(r.length);
        if (p[r.line + vlen] != '\r' || p[r.line + vlen + 1] != '\n')
          return error(kBadChunk, r.length);
      }
      break;
    }
    case Command::kMetaNoop:
    case Command::kVersion:
    case Command::kQuit:
    case Command::kRefused:
      break;
    case Command::kUnknown:
      return error(kError, r.line);
  }
  if (!isStorage(r.command) && r.command != Command::kMetaSet) r.length = r.line;
  r.status = Parse::kCommand;
  return r;
}

bool isErrorReply(const char* p, size_t n) noexcept {
  const std::string_view s(p, n);
  return s.starts_with("ERROR") || s.starts_with("CLIENT_ERROR") ||
         s.starts_with("SERVER_ERROR");
}

int64_t scanReply(uint8_t kind, const char* p, size_t n, ReplyScan& scan) noexcept {
  for (;;) {
    const size_t pos = scan.pos;
    if (pos >= n) return 0;
    const void* nl = memchr(p + pos, '\n', n - pos);
    if (nl == nullptr) return 0;
    const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - p) + 1;
    if (end - pos < 2 || p[end - 2] != '\r') return -1;
    const std::string_view line(p + pos, end - pos - 2);
    const bool value = kind == kReplyValues && line.starts_with("VALUE ");
    const bool va = kind == kReplyLine && line.starts_with("VA ");
    if (!value && !va) {
      if (kind == kReplyValues && pos > 0 && line != "END" && !isErrorReply(line.data(), line.size()))
        return -1;   // after VALUE items, only END (or an error) may follow
      return static_cast<int64_t>(end);
    }
    // VALUE <key> <flags> <bytes> [<cas>]  /  VA <size> <flags>*
    std::string_view rest = line.substr(value ? 6 : 3);
    if (value) {
      for (int skip = 0; skip < 2; ++skip) {   // key, flags
        const size_t sp = rest.find(' ');
        if (sp == std::string_view::npos) return -1;
        rest.remove_prefix(sp + 1);
      }
    }
    const size_t sp = rest.find(' ');
    size_t bytes = 0;
    if (!parseLength(rest.substr(0, sp), &bytes)) return -1;
    const size_t total = end + bytes + 2;
    if (total > n) return 0;   // scan.pos stays at this item's line
    if (p[end + bytes] != '\r' || p[end + bytes + 1] != '\n') return -1;
    if (va) return static_cast<int64_t>(total);
    scan.pos = total;
  }
}

bool valueItem(const char* p, size_t n, std::string_view* key, size_t* length) noexcept {
  const std::string_view s(p, n);
  if (!s.starts_with("VALUE ")) return false;
  const size_t nl = s.find("\r\n");
  if (nl == std::string_view::npos) return false;
  std::string_view rest = s.substr(6, nl - 6);
  const size_t sp1 = rest.find(' ');
  if (sp1 == std::string_view::npos) return false;
  *key = rest.substr(0, sp1);
  rest.remove_prefix(sp1 + 1);
  const size_t sp2 = rest.find(' ');   // after the flags
  if (sp2 == std::string_view::npos) return false;
  rest.remove_prefix(sp2 + 1);
  size_t bytes = 0;
  if (!parseLength(rest.substr(0, rest.find(' ')), &bytes)) return false;
  *length = nl + 2 + bytes + 2;
  return *length <= n;
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
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
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
        v[j] = value(c);
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
