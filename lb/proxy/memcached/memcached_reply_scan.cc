// Backend replies framed by the command they answer (memcached 1.6.18's proto_text.c is what
// each command can send back). A reply that is none of them fails the server connection
// (CacheWire::frameReply's -1): a backend that sends anything else is not one lb can read,
// and nothing after it could be matched to a command.
#include <cstring>

#include "lb/proxy/memcached/memcached_text.h"

namespace lb::mc {

namespace {

bool isWord(std::string_view line, std::string_view word) noexcept {
  return line.size() >= word.size() && line.substr(0, word.size()) == word &&
         (line.size() == word.size() || line[word.size()] == ' ');
}

// ERROR, CLIENT_ERROR <message>, SERVER_ERROR <message> (memcached's out_string errors; an
// over-connections memcached says "ERROR Too many open connections").
bool errorLine(std::string_view line) noexcept {
  return isWord(line, "ERROR") || isWord(line, "CLIENT_ERROR") || isWord(line, "SERVER_ERROR");
}

// One of `codes` (two letters each), alone or followed by returned flags after a space.
bool metaCode(std::string_view line, std::string_view codes) noexcept {
  if (line.size() < 2 || (line.size() > 2 && line[2] != ' ')) return false;
  for (size_t i = 0; i + 1 < codes.size(); i += 2)
    if (line[0] == codes[i] && line[1] == codes[i + 1]) return true;
  return false;
}

// "VALUE <key> <flags> <bytes> [<cas unique>]": the data block's length, or false.
bool valueLine(std::string_view line, size_t* bytes) noexcept {
  std::string_view f[5];
  size_t count = 0;
  std::string_view rest = line.substr(6);
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    if (sp == 0 || count == 4) return false;
    f[count++] = rest.substr(0, sp);
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
    if (rest.empty()) return false;
  }
  if (count != 3 && count != 4) return false;
  return validKey(f[0]) && parseU32(f[1]) && parseLength(f[2], bytes) &&
         (count == 3 || parseU64(f[3]));
}

// "VA <size> <flags>*": the data block's length, or false.
bool vaLine(std::string_view line, size_t* bytes) noexcept {
  std::string_view rest = line.substr(3);
  return parseLength(rest.substr(0, rest.find(' ')), bytes);
}

}  // namespace

bool isErrorReply(const char* p, size_t n) noexcept {
  const void* nl = memchr(p, '\r', n < kMaxLine ? n : kMaxLine);
  const size_t len = nl == nullptr ? n : static_cast<size_t>(static_cast<const char*>(nl) - p);
  return errorLine({p, len});
}

int64_t scanReply(uint8_t kind, const char* p, size_t n, ReplyScan& scan) noexcept {
  for (;;) {
    const size_t pos = scan.pos;
    if (pos >= n) return 0;
    // A reply line is short (a key, a few numbers, returned meta flags): one that runs past
    // kMaxLine is not a reply, and a line arriving in pieces is searched at most that far.
    const size_t avail = n - pos;
    const void* nl = memchr(p + pos, '\n', avail < kMaxLine ? avail : kMaxLine);
    if (nl == nullptr) return avail >= kMaxLine ? -1 : 0;
    const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - p) + 1;
    if (end - pos < 2 || p[end - 2] != '\r') return -1;
    const std::string_view line(p + pos, end - pos - 2);
    // An error may also end a get's VALUE items (memcached 1.6 keeps the items it queued).
    if (errorLine(line)) return static_cast<int64_t>(end);
    size_t bytes = 0;
    bool ok = false;
    switch (kind) {
      case kReplyValues:
        if (line.starts_with("VALUE ")) {
          if (!valueLine(line, &bytes)) return -1;
          const size_t total = end + bytes + 2;
          if (total > n) return 0;   // scan.pos stays at this item's line
          if (p[end + bytes] != '\r' || p[end + bytes + 1] != '\n') return -1;
          scan.pos = total;
          continue;
        }
        ok = line == "END";
        break;
      case kReplyStore:
        ok = line == "STORED" || line == "NOT_STORED" || line == "EXISTS" || line == "NOT_FOUND";
        break;
      case kReplyDelete:
        ok = line == "DELETED" || line == "NOT_FOUND";
        break;
      case kReplyArithmetic:
        ok = line == "NOT_FOUND" || parseU64(line);
        break;
      case kReplyTouch:
        ok = line == "TOUCHED" || line == "NOT_FOUND";
        break;
      case kReplyMeta:
        ok = metaCode(line, "HDNSEXNF");
        break;
      case kReplyMetaValue:
        if (line.starts_with("VA ")) {
          if (!vaLine(line, &bytes)) return -1;
          const size_t total = end + bytes + 2;
          if (total > n) return 0;
          if (p[end + bytes] != '\r' || p[end + bytes + 1] != '\n') return -1;
          return static_cast<int64_t>(total);
        }
        ok = metaCode(line, "HDNSEXNFEN");
        break;
      case kReplyMetaDebug:
        ok = line == "EN" || line.starts_with("ME ");
        break;
      case kReplyOk:
        ok = line == "OK";
        break;
      default:
        return -1;
    }
    return ok ? static_cast<int64_t>(end) : -1;
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

}  // namespace lb::mc
