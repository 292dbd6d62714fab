#include "lb/proxy/redis/resp.h"

#include <charconv>
#include <climits>
#include <cstring>

namespace lb::resp {

namespace {

// The CR of the header line that starts at p[0] (its type byte), within kMaxHeaderLine.
// Returns the CR's index, 0 when incomplete, -1 when the line is too long or has no LF.
int64_t headerEnd(const char* p, size_t n) noexcept {
  const size_t limit = n < kMaxHeaderLine ? n : kMaxHeaderLine;
  const void* cr = memchr(p + 1, '\r', limit > 1 ? limit - 1 : 0);
  if (cr == nullptr) return n < kMaxHeaderLine ? 0 : -1;
  const int64_t at = static_cast<const char*>(cr) - p;
  if (static_cast<size_t>(at) + 1 >= n) return 0;   // the LF is not here yet
  return p[at + 1] == '\n' ? at : -1;
}

Request incomplete(size_t need) {
  Request r;
  r.status = Parse::kIncomplete;
  r.need = need;
  return r;
}

Request error(const char* text, bool too_large = false) {
  Request r;
  r.status = Parse::kError;
  r.error = text;
  r.too_large = too_large;
  return r;
}

// C isspace() in the "C" locale, which Redis never changes (it sets LC_COLLATE only).
bool isSpace(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// What ends an unquoted word in sdssplitargs: a switch on ' ', '\n', '\r', '\t' (and the
// NUL lb refuses before splitting), not isspace(): "a\vb" is one word, though a '\v' between
// words is skipped as a blank.
bool endsWord(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

int hexDigit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Redis 7.0's sdssplitargs (sds.c) over a line without NUL bytes: blanks (isspace) skipped
// between words; "double quotes" with \xHH, \n \r \t \b \a and \<any> escapes; 'single
// quotes' with \' only; a quote inside an unquoted word opens quoting there; a closing quote
// must be followed by a blank or the end. Appends decoded words to `text` (reserved by the
// caller) and views of them to `args`; false for what sdssplitargs refuses.
bool splitInline(std::string_view line, std::vector<std::string_view>& args, std::string& text) {
  size_t i = 0;
  const size_t n = line.size();
  for (;;) {
    while (i < n && isSpace(line[i])) ++i;
    if (i == n) return true;
    const size_t start = text.size();
    bool dq = false, sq = false;
    for (;;) {
      if (dq) {
        if (i == n) return false;   // unterminated
        if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' && hexDigit(line[i + 2]) >= 0 &&
            hexDigit(line[i + 3]) >= 0) {
          text.push_back(static_cast<char>(hexDigit(line[i + 2]) * 16 + hexDigit(line[i + 3])));
          i += 4;
        } else if (line[i] == '\\' && i + 1 < n) {
          const char c = line[i + 1];
          text.push_back(c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c == 'b' ? '\b'
                         : c == 'a' ? '\a' : c);
          i += 2;
        } else if (line[i] == '"') {
          if (i + 1 < n && !isSpace(line[i + 1])) return false;
          ++i;
          break;
        } else {
          text.push_back(line[i++]);
        }
      } else if (sq) {
        if (i == n) return false;
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          text.push_back('\'');
          i += 2;
        } else if (line[i] == '\'') {
          if (i + 1 < n && !isSpace(line[i + 1])) return false;
          ++i;
          break;
        } else {
          text.push_back(line[i++]);
        }
      } else {
        if (i == n || endsWord(line[i])) break;
        if (line[i] == '"') {
          dq = true;
          ++i;
        } else if (line[i] == '\'') {
          sq = true;
          ++i;
        } else {
          text.push_back(line[i++]);
        }
      }
    }
    args.emplace_back(text.data() + start, text.size() - start);
  }
}

Request parseInline(const char* p, size_t n, size_t max_args, std::vector<std::string_view>& args,
                    std::string& text) {
  const size_t scan = n < kMaxInlineBytes ? n : kMaxInlineBytes;
  const void* nl = memchr(p, '\n', scan);
  if (nl == nullptr) {
    // Redis' strchr() would not see past a NUL either: it would wait for a newline it cannot
    // find. Refuse at once instead.
    if (memchr(p, '\0', scan) != nullptr)
      return error("Protocol error: a NUL byte in an inline command (send it as a RESP array)");
    if (n >= kMaxInlineBytes) return error("Protocol error: too big inline request", true);
    return incomplete(n + 1);
  }
  const size_t line_end = static_cast<size_t>(static_cast<const char*>(nl) - p);
  std::string_view line(p, line_end);
  // A NUL ends a C string: Redis' inline reader (strchr, then sdssplitargs) cannot take one,
  // and a \x00 escape in double quotes is the inline way to say it.
  if (memchr(line.data(), '\0', line.size()) != nullptr)
    return error("Protocol error: a NUL byte in an inline command (send it as a RESP array)");
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  text.clear();
  text.reserve(line.size());   // the views must not move: decoded words are never longer
  if (!splitInline(line, args, text)) return error("Protocol error: unbalanced quotes in request");
  Request r;
  r.length = line_end + 1;
  if (args.empty()) {
    r.status = Parse::kEmpty;
    return r;
  }
  if (args.size() > max_args) return error("Protocol error: too many arguments", true);
  r.status = Parse::kCommand;
  r.inline_form = true;
  return r;
}

// Reads bulk strings from p[pos] until `left` is 0, as processMultibulkBuffer does (its
// checks in its order); their views go to `args` when it is not null. kCommand with `length`
// once the last is read; on kIncomplete, pos and left say how far it got.
Request readBulks(const char* p, size_t n, size_t& pos, int64_t& left, size_t max_bulk,
                  bool authenticated, std::vector<std::string_view>* args) {
  while (left > 0) {
    if (pos >= n) return incomplete(pos + 1);   // its '$' decides whether it is an error
    if (p[pos] != '$') {
      Request r = error("Protocol error: expected '$'");
      r.got = p[pos];
      return r;
    }
    const int64_t cr = headerEnd(p + pos, n - pos);
    if (cr == 0) return incomplete(n + 1);
    if (cr < 0) return error("Protocol error: invalid bulk length");
    int64_t len = 0;
    if (!parseInteger({p + pos + 1, static_cast<size_t>(cr - 1)}, &len) || len < 0)
      return error("Protocol error: invalid bulk length");
    if (static_cast<uint64_t>(len) > max_bulk)
      return error("Protocol error: invalid bulk length", true);
    if (!authenticated && len > kUnauthMaxBulk)
      return error("Protocol error: unauthenticated bulk length");
    const size_t data = pos + static_cast<size_t>(cr) + 2;
    const size_t end = data + static_cast<size_t>(len);
    if (end + 2 > n) return incomplete(end + 2);
    // Redis skips these two bytes unread; lb requires them to be what they must be.
    if (p[end] != '\r' || p[end + 1] != '\n')
      return error("Protocol error: expected CRLF after a bulk string");
    if (args != nullptr) args->emplace_back(p + data, static_cast<size_t>(len));
    pos = end + 2;
    --left;
  }
  Request r;
  r.status = Parse::kCommand;
  r.length = pos;
  return r;
}

Request parseMultibulk(const char* p, size_t n, size_t max_bulk, size_t max_args,
                       std::vector<std::string_view>& args, bool authenticated,
                       RequestProgress* progress) {
  if (progress != nullptr && progress->pos > 0) {
    // The bytes before pos were read and checked on an earlier call: go on from there, and
    // only once the command is complete read it again from the start for its arguments
    // (twice in all, however many reads it took).
    size_t pos = progress->pos;
    int64_t left = progress->left;
    const Request r = readBulks(p, n, pos, left, max_bulk, authenticated, nullptr);
    if (r.status != Parse::kCommand) {
      if (r.status == Parse::kIncomplete) *progress = {pos, left};
      return r;
    }
  }
  int64_t cr = headerEnd(p, n);
  if (cr == 0) return incomplete(n + 1);
  if (cr < 0) return error("Protocol error: invalid multibulk length");
  int64_t count = 0;
  if (!parseInteger({p + 1, static_cast<size_t>(cr - 1)}, &count) || count > INT_MAX)
    return error("Protocol error: invalid multibulk length");
  if (!authenticated && count > kUnauthMaxArgs)
    return error("Protocol error: unauthenticated multibulk length");
  size_t pos = static_cast<size_t>(cr) + 2;
  if (count <= 0) {
    Request r;
    r.status = Parse::kEmpty;
    r.length = pos;
    return r;
  }
  if (static_cast<uint64_t>(count) > max_args)
    return error("Protocol error: invalid multibulk length", true);
  int64_t left = count;
  const Request r = readBulks(p, n, pos, left, max_bulk, authenticated, &args);
  if (r.status == Parse::kIncomplete && progress != nullptr && pos > 0) *progress = {pos, left};
  return r;
}

}  // namespace

bool parseInteger(std::string_view s, int64_t* out) noexcept {
  // string2ll: under LONG_STR_SIZE (21) bytes; "0" alone; else [-]1-9 then digits.
  if (s.empty() || s.size() >= 21) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || s[i] < '1' || s[i] > '9') return false;
  for (size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return false;
  // Digits only from here: from_chars refuses what does not fit int64.
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool equalsLower(std::string_view s, std::string_view lower) noexcept {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

Request parseRequest(const char* p, size_t n, size_t max_bulk, size_t max_args,
                     std::vector<std::string_view>& args, std::string& text, bool authenticated,
                     RequestProgress* progress) {
  args.clear();
  if (n == 0) return incomplete(1);
  Request r = p[0] == '*'
                  ? parseMultibulk(p, n, max_bulk, max_args, args, authenticated, progress)
                  : parseInline(p, n, max_args, args, text);
  if (progress != nullptr && r.status != Parse::kIncomplete) *progress = {};
  return r;
}

size_t matchGet(const char* p, size_t n, size_t max_bulk, std::string_view* key) noexcept {
  // "*2\r\n$3\r\nGET\r\n$", then at least "0\r\n\r\n".
  constexpr size_t kHead = 14;
  if (n < kHead + 5 || memcmp(p, "*2\r\n$3\r\n", 8) != 0 || memcmp(p + 11, "\r\n$", 3) != 0)
    return 0;
  // c | 0x20 is 'g' for 'g' and 'G' only (and so for 'e', 't'): findCommand's lower-casing.
  if ((p[8] | 0x20) != 'g' || (p[9] | 0x20) != 'e' || (p[10] | 0x20) != 't') return 0;
  // The length as parseInteger takes it: "0" alone, or 1-9 then digits. 18 digits at most
  // here (no overflow); a longer one is past any max_bulk, parseRequest's to refuse.
  size_t i = kHead;
  uint64_t len = 0;
  if (p[i] == '0') {
    ++i;
  } else {
    if (p[i] < '1' || p[i] > '9') return 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
      if (i - kHead == 18) return 0;
      len = len * 10 + static_cast<uint64_t>(p[i] - '0');
      ++i;
    }
  }
  if (len > max_bulk || i + 2 > n || p[i] != '\r' || p[i + 1] != '\n') return 0;
  const size_t data = i + 2;
  if (len > n - data || n - data - len < 2) return 0;
  const size_t end = data + static_cast<size_t>(len);
  if (p[end] != '\r' || p[end + 1] != '\n') return 0;
  *key = std::string_view(p + data, static_cast<size_t>(len));
  return end + 2;
}

void appendCommand(ByteChain& out, std::string_view raw, bool inline_form,
                   const std::vector<std::string_view>& args) {
  if (!inline_form) {
    out.append(raw);
    return;
  }
  appendArrayHeader(out, args.size());
  for (std::string_view a : args) appendBulk(out, a);
}

namespace {

// A value ended at s.pos: it completes the arrays it was the last element of. True when
// the outermost one is complete.
bool closeArrays(ReplyScan& s) noexcept {
  while (s.depth > 0) {
    if (--s.left[s.depth - 1] > 0) return false;
    --s.depth;
  }
  return true;
}

}  // namespace

int64_t scanValue(const char* p, size_t n, ReplyScan& s) noexcept {
  for (;;) {
    if (s.pos >= n) return 0;
    const char type = p[s.pos];
    if (type == '+' || type == '-') {
      // A line of any length (an error's text can be long), but a line: Redis writes no CR
      // or LF inside one (addReplyError replaces them with spaces), so a lone LF is garbage.
      const char* b = p + s.pos + 1;
      const size_t avail = n - s.pos - 1;
      const void* cr = memchr(b, '\r', avail);
      const size_t upto = cr == nullptr ? avail : static_cast<size_t>(static_cast<const char*>(cr) - b);
      if (memchr(b, '\n', upto) != nullptr) return -1;
      if (cr == nullptr) return 0;
      const size_t at = s.pos + 1 + upto;
      if (at + 1 >= n) return 0;
      if (p[at + 1] != '\n') return -1;
      s.pos = at + 2;
      if (closeArrays(s)) return static_cast<int64_t>(s.pos);
      continue;
    }
    if (type != ':' && type != '$' && type != '*') return -1;   // RESP2 only
    const int64_t cr = headerEnd(p + s.pos, n - s.pos);
    if (cr == 0) return 0;
    if (cr < 0) return -1;
    int64_t v = 0;
    if (!parseInteger({p + s.pos + 1, static_cast<size_t>(cr - 1)}, &v)) return -1;
    const size_t after = s.pos + static_cast<size_t>(cr) + 2;
    if (type == ':') {
      s.pos = after;
    } else if (type == '$') {
      if (v < -1) return -1;
      if (v == -1) {
        s.pos = after;
      } else {
        const size_t end = after + static_cast<size_t>(v);
        if (end + 2 > n) return 0;   // pos stays at the header: re-read when more comes
        if (p[end] != '\r' || p[end + 1] != '\n') return -1;
        s.pos = end + 2;
      }
    } else {
      if (v < -1) return -1;
      s.pos = after;
      if (v > 0) {
        if (s.depth >= ReplyScan::kMaxDepth) return -1;
        s.left[s.depth++] = v;
        continue;   // the array's first element next
      }
    }
    if (closeArrays(s)) return static_cast<int64_t>(s.pos);
  }
}

void appendArrayHeader(ByteChain& out, size_t count) {
  out.append("*", 1);
  out.appendDecimal(static_cast<int64_t>(count));
  out.append("\r\n", 2);
}

void appendBulk(ByteChain& out, std::string_view s) {
  out.append("$", 1);
  out.appendDecimal(static_cast<int64_t>(s.size()));
  out.append("\r\n", 2);
  out.append(s);
  out.append("\r\n", 2);
}

size_t writeBulk(char* out, std::string_view s) noexcept {
  char* at = out;
  *at++ = '$';
  at = std::to_chars(at, at + 24, s.size()).ptr;
  *at++ = '\r';
  *at++ = '\n';
  memcpy(at, s.data(), s.size());
  at += s.size();
  *at++ = '\r';
  *at++ = '\n';
  return static_cast<size_t>(at - out);
}

}  // namespace lb::resp
