#include "lb/proxy/redis/resp.h"

#include <charconv>
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

bool isSpace(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int hexDigit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Redis' sdssplitargs: words separated by spaces; "double quotes" with \n \r \t \b \a \xHH
// and \<any> escapes; 'single quotes' with \' only; a closing quote must end the word.
// Appends decoded words to `text` (reserved by the caller) and views of them to `args`.
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
        if (i == n || isSpace(line[i])) break;
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
    if (n >= kMaxInlineBytes) return error("Protocol error: too big inline request", true);
    return incomplete(n + 1);
  }
  const size_t line_end = static_cast<size_t>(static_cast<const char*>(nl) - p);
  std::string_view line(p, line_end);
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

}  // namespace

bool parseInteger(std::string_view s, int64_t* out) noexcept {
  if (s.empty() || s.size() > 20) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') return false;
  auto r = std::from_chars(b, e, *out);
  return r.ec == std::errc() && r.ptr == e;
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
                     std::vector<std::string_view>& args, std::string& text) {
  args.clear();
  if (n == 0) return incomplete(1);
  if (p[0] != '*') return parseInline(p, n, max_args, args, text);
  int64_t cr = headerEnd(p, n);
  if (cr == 0) return incomplete(n + 1);
  if (cr < 0) return error("Protocol error: invalid multibulk length");
  int64_t count = 0;
  if (!parseInteger({p + 1, static_cast<size_t>(cr - 1)}, &count))
    return error("Protocol error: invalid multibulk length");
  size_t pos = static_cast<size_t>(cr) + 2;
  if (count <= 0) {
    Request r;
    r.status = Parse::kEmpty;
    r.length = pos;
    return r;
  }
  if (static_cast<uint64_t>(count) > max_args)
    return error("Protocol error: invalid multibulk length", true);
  for (int64_t i = 0; i < count; ++i) {
    if (pos >= n) return incomplete(pos + 4);
    if (p[pos] != '$') return error("Protocol error: expected '$'");
    cr = headerEnd(p + pos, n - pos);
    if (cr == 0) return incomplete(n + 1);
    if (cr < 0) return error("Protocol error: invalid bulk length");
    int64_t len = 0;
    if (!parseInteger({p + pos + 1, static_cast<size_t>(cr - 1)}, &len) || len < 0)
      return error("Protocol error: invalid bulk length");
    if (static_cast<uint64_t>(len) > max_bulk)
      return error("Protocol error: invalid bulk length", true);
    const size_t data = pos + static_cast<size_t>(cr) + 2;
    const size_t end = data + static_cast<size_t>(len);
    if (end + 2 > n) return incomplete(end + 2);
    if (p[end] != '\r' || p[end + 1] != '\n')
      return error("Protocol error: expected CRLF after a bulk string");
    args.emplace_back(p + data, static_cast<size_t>(len));
    pos = end + 2;
  }
  Request r;
  r.status = Parse::kCommand;
  r.length = pos;
  return r;
}

int64_t scanValue(const char* p, size_t n, ReplyScan& s) noexcept {
  for (;;) {
    if (s.pos >= n) return 0;
    const char type = p[s.pos];
    if (type == '+' || type == '-' || type == ':') {
      // A line of any length (an error's text can be long).
      const void* cr = memchr(p + s.pos + 1, '\r', n - s.pos - 1);
      if (cr == nullptr) return 0;
      const size_t at = static_cast<size_t>(static_cast<const char*>(cr) - p);
      if (at + 1 >= n) return 0;
      if (p[at + 1] != '\n') return -1;
      s.pos = at + 2;
      while (s.depth > 0) {
        if (--s.left[s.depth - 1] > 0) break;
        --s.depth;
      }
      if (s.depth == 0) return static_cast<int64_t>(s.pos);
      continue;
    }
    const int64_t cr = headerEnd(p + s.pos, n - s.pos);
    if (cr == 0) return 0;
    if (cr < 0) return -1;
    const std::string_view num(p + s.pos + 1, static_cast<size_t>(cr - 1));
    const size_t after = s.pos + static_cast<size_t>(cr) + 2;
    switch (type) {
      case '$': {
        int64_t len = 0;
        if (!parseInteger(num, &len) || len < -1) return -1;
        if (len == -1) {
          s.pos = after;
          break;
        }
        const size_t end = after + static_cast<size_t>(len);
        if (end + 2 > n) return 0;   // pos stays at the header: re-read when more comes
        if (p[end] != '\r' || p[end + 1] != '\n') return -1;
        s.pos = end + 2;
        break;
      }
      case '*': {
        int64_t count = 0;
        if (!parseInteger(num, &count) || count < -1) return -1;
        s.pos = after;
        if (count > 0) {
          if (s.depth >= ReplyScan::kMaxDepth) return -1;
          s.left[s.depth++] = count;
          continue;   // the array's first element next
        }
        break;
      }
      default:
        return -1;
    }
    // A value ended at s.pos: it completes the arrays that it was the last element of.
    while (s.depth > 0) {
      if (--s.left[s.depth - 1] > 0) break;
      --s.depth;
    }
    if (s.depth == 0) return static_cast<int64_t>(s.pos);
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
