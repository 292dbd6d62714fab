// A second, independent HTTP/1.1 message parser for the HTTP fuzz target (http_fuzz.cc), and
// nothing else: never linked into lb. Written from RFC 9112 directly, deliberately simple and
// strict, sharing no code with lb or llhttp, so that when lb forwards bytes that this parser
// reads differently from lb, one of the two is wrong.
//
//   start-line    request: token SP 1*(VCHAR) SP "HTTP/" DIGIT "." DIGIT CRLF
//                 response: "HTTP/" DIGIT "." DIGIT SP 3DIGIT SP *(HTAB/SP/VCHAR/obs-text) CRLF
//   field-line    token ":" OWS *(VCHAR/obs-text/SP/HTAB) CRLF   (trailing OWS not in the
//                 value; no obs-fold, no bare CR or LF anywhere)
//   framing       RFC 9112 §6.3, with everything ambiguous refused: Transfer-Encoding and
//                 Content-Length together, two Content-Lengths, a list as Content-Length,
//                 chunked twice or not last, Transfer-Encoding in HTTP/1.0
//   chunked body  1*HEXDIG *( ";" token [ "=" ( token / quoted-string ) ] ) CRLF data CRLF,
//                 then trailer field-lines and CRLF
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strict_http {

inline bool isTchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}
inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline bool same(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}
inline bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!isTchar(static_cast<unsigned char>(c))) return false;
  return true;
}
// VCHAR / obs-text / SP / HTAB: no CTL, no DEL.
inline bool isFieldText(char ch) {
  unsigned char c = static_cast<unsigned char>(ch);
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}
inline std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

enum class Framing { kNone, kLength, kChunked, kUntilClose };

struct Head {
  bool ok = false;
  size_t length = 0;   // bytes of the head, the empty line included
  std::string method, target, reason;
  int major = 0, minor = 0, status = 0;
  Fields fields;
  Framing framing = Framing::kNone;
  uint64_t content_length = 0;
};

// One line ending in CRLF at s[pos]; false without one. No CR or LF inside.
inline bool takeLine(std::string_view s, size_t* pos, std::string_view* line) {
  size_t end = s.find("\r\n", *pos);
  if (end == std::string_view::npos) return false;
  *line = s.substr(*pos, end - *pos);
  for (char c : *line)
    if (c == '\r' || c == '\n') return false;
  *pos = end + 2;
  return true;
}

inline bool parseVersion(std::string_view v, int* major, int* minor) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !isDigit(v[5]) || v[6] != '.' ||
      !isDigit(v[7]))
    return false;
  *major = v[5] - '0';
  *minor = v[7] - '0';
  return true;
}

// Field lines up to and including the empty line.
inline bool parseFields(std::string_view s, size_t* pos, Fields* out) {
  for (;;) {
    std::string_view line;
    if (!takeLine(s, pos, &line)) return false;
    if (line.empty()) return true;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !isToken(line.substr(0, colon))) return false;
    std::string_view value = line.substr(colon + 1);
    for (char c : value)
      if (!isFieldText(c)) return false;
    out->emplace_back(std::string(line.substr(0, colon)), std::string(trimOws(value)));
  }
}

// The framing RFC 9112 §6.3 gives the head, or false when it is ambiguous.
inline bool frame(Head* h, bool request, bool no_body) {
  int te_lines = 0, cl_lines = 0;
  std::vector<std::string> codings;
  for (const auto& [name, value] : h->fields) {
    if (same(name, "transfer-encoding")) {
      ++te_lines;
      std::string_view v = value;
      for (;;) {
        size_t comma = v.find(',');
        std::string_view element = trimOws(v.substr(0, comma));
        if (!element.empty()) {
          if (!isToken(element)) return false;
          codings.emplace_back(element);
        }
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
      }
    } else if (same(name, "content-length")) {
      ++cl_lines;
      if (value.empty()) return false;
      // 1*DIGIT: leading zeros are allowed; past them, 19 digits always fit in 64 bits.
      std::string_view digits = value.substr(std::min(value.find_first_not_of('0'), value.size()));
      if (digits.size() > 19) return false;
      uint64_t n = 0;
      for (char c : value) {
        if (!isDigit(c)) return false;
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      h->content_length = n;
    }
  }
  if (cl_lines > 1 || (te_lines > 0 && cl_lines > 0)) return false;
  if (te_lines > 0) {
    if (h->minor == 0 || codings.empty()) return false;
    int chunked = 0;
    for (const auto& c : codings) chunked += same(c, "chunked");
    bool last = same(codings.back(), "chunked");
    if (chunked > 1 || (chunked == 1 && !last) || (request && !last)) return false;
    h->framing = no_body ? Framing::kNone : last ? Framing::kChunked : Framing::kUntilClose;
    return true;
  }
  if (no_body) {
    h->framing = Framing::kNone;
  } else if (cl_lines == 1) {
    h->framing = h->content_length > 0 ? Framing::kLength : Framing::kNone;
  } else {
    h->framing = request ? Framing::kNone : Framing::kUntilClose;
  }
  return true;
}

inline Head parseRequestHead(std::string_view s) {
  Head h;
  size_t pos = 0;
  std::string_view line;
  if (!takeLine(s, &pos, &line)) return h;
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return h;
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return h;
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!isToken(method) || target.empty()) return h;
  for (char ch : target) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return h;
  }
  if (!parseVersion(line.substr(sp2 + 1), &h.major, &h.minor)) return h;
  if (!parseFields(s, &pos, &h.fields)) return h;
  h.method = std::string(method);
  h.target = std::string(target);
  if (!frame(&h, true, false)) return h;
  h.length = pos;
  h.ok = true;
  return h;
}

inline Head parseResponseHead(std::string_view s, bool head_request) {
  Head h;
  size_t pos = 0;
  std::string_view line;
  if (!takeLine(s, &pos, &line)) return h;
  if (line.size() < 13 || !parseVersion(line.substr(0, 8), &h.major, &h.minor) ||
      line[8] != ' ' || !isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) ||
      line[12] != ' ')
    return h;
  h.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  std::string_view reason = line.substr(13);
  for (char c : reason)
    if (!isFieldText(c)) return h;
  h.reason = std::string(reason);
  if (!parseFields(s, &pos, &h.fields)) return h;
  bool no_body = head_request || h.status < 200 || h.status == 204 || h.status == 304;
  if (!frame(&h, false, no_body)) return h;
  h.length = pos;
  h.ok = true;
  return h;
}

// Where a body ends in `s` (the bytes after the head): kComplete with its length, kMore when
// `s` is a valid prefix of it, kBad when it cannot be a valid body.
enum class Body { kComplete, kMore, kBad };

inline Body chunkedBody(std::string_view s, size_t* length) {
  size_t pos = 0;
  for (;;) {
    std::string_view line;
    size_t at = pos;
    if (!takeLine(s, &pos, &line)) {
      // A prefix of a chunk line: only what a chunk line may hold.
      for (size_t i = at; i < s.size(); ++i)
        if (s[i] == '\n' || (s[i] == '\r' && i + 1 < s.size())) return Body::kBad;
      return Body::kMore;
    }
    size_t i = 0;
    uint64_t size = 0;
    while (i < line.size() && hexValue(line[i]) >= 0) {
      if (size >> 60) return Body::kBad;
      size = size * 16 + static_cast<uint64_t>(hexValue(line[i++]));
    }
    if (i == 0) return Body::kBad;
    // chunk-ext: ( ";" token [ "=" ( token / quoted-string ) ] )*
    while (i < line.size()) {
      if (line[i++] != ';') return Body::kBad;
      size_t n = i;
      while (i < line.size() && isTchar(static_cast<unsigned char>(line[i]))) ++i;
      if (i == n) return Body::kBad;
      if (i < line.size() && line[i] == '=') {
        ++i;
        if (i < line.size() && line[i] == '"') {
          ++i;
          bool closed = false;
          while (i < line.size()) {
            char c = line[i++];
            if (c == '"') {
              closed = true;
              break;
            }
            if (c == '\\') {
              if (i >= line.size() || !isFieldText(line[i])) return Body::kBad;
              ++i;
            } else if (!isFieldText(c)) {
              return Body::kBad;
            }
          }
          if (!closed) return Body::kBad;
        } else {
          size_t v = i;
          while (i < line.size() && isTchar(static_cast<unsigned char>(line[i]))) ++i;
          if (i == v) return Body::kBad;
        }
      }
    }
    if (size == 0) {
      Fields trailers;
      size_t t = pos;
      if (!parseFields(s, &t, &trailers)) {
        // Valid so far when what is there is a prefix of field lines.
        Fields partial;
        size_t p = pos;
        std::string_view l;
        while (takeLine(s, &p, &l)) {
          size_t colon = l.find(':');
          if (l.empty() || colon == std::string_view::npos || !isToken(l.substr(0, colon)))
            return Body::kBad;
          for (char c : l.substr(colon + 1))
            if (!isFieldText(c)) return Body::kBad;
        }
        for (size_t k = p; k < s.size(); ++k)
          if (s[k] == '\n' || (s[k] == '\r' && k + 1 < s.size())) return Body::kBad;
        return Body::kMore;
      }
      *length = t;
      return Body::kComplete;
    }
    if (s.size() - pos < size + 2) {
      if (s.size() - pos > size && s[pos + size] != '\r') return Body::kBad;
      return Body::kMore;
    }
    if (s.substr(pos + size, 2) != "\r\n") return Body::kBad;
    pos += size + 2;
  }
}

inline Body body(const Head& h, std::string_view s, bool at_eof, size_t* length) {
  switch (h.framing) {
    case Framing::kNone:
      *length = 0;
      return Body::kComplete;
    case Framing::kLength:
      if (s.size() < h.content_length) return Body::kMore;
      *length = h.content_length;
      return Body::kComplete;
    case Framing::kChunked:
      return chunkedBody(s, length);
    case Framing::kUntilClose:
      if (!at_eof) return Body::kMore;
      *length = s.size();
      return Body::kComplete;
  }
  return Body::kBad;
}

}  // namespace strict_http
