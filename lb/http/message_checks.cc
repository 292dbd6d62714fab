#include "lb/http/message_checks.h"

#include <array>

#include "lb/core/strings.h"

namespace lb {

namespace {

enum : uint8_t {
  kToken = 1,       // tchar (RFC 9110 §5.6.2)
  kRegName = 2,     // unreserved / sub-delims (RFC 3986 §3.2.2 reg-name, less pct-encoded)
  kHex = 4,         // HEXDIG
  kDigit = 8,       // DIGIT
  kIpLiteral = 16,  // inside [...]: HEXDIG, ':', '.', and IPvFuture's unreserved / sub-delims
};

constexpr std::array<uint8_t, 256> makeClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    bool digit = c >= '0' && c <= '9';
    bool hex = digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    bool unreserved = alpha || digit || c == '-' || c == '.' || c == '_' || c == '~';
    bool sub_delim = c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' || c == ')' ||
                     c == '*' || c == '+' || c == ',' || c == ';' || c == '=';
    bool tchar = alpha || digit || c == '!' || c == '#' || c == '$' || c == '%' || c == '&' ||
                 c == '\'' || c == '*' || c == '+' || c == '-' || c == '.' || c == '^' ||
                 c == '_' || c == '`' || c == '|' || c == '~';
    uint8_t v = 0;
    if (tchar) v |= kToken;
    if (unreserved || sub_delim) v |= kRegName;
    if (hex) v |= kHex;
    if (digit) v |= kDigit;
    if (unreserved || sub_delim || c == ':') v |= kIpLiteral;
    t[c] = v;
  }
  return t;
}

constexpr std::array<uint8_t, 256> kClass = makeClasses();

bool is(char c, uint8_t cls) { return (kClass[static_cast<unsigned char>(c)] & cls) != 0; }

// ":" port, port = 0 to 5 digits (RFC 3986 allows *DIGIT; no real port needs more).
bool validPortSuffix(std::string_view s) {
  if (s.empty()) return true;
  if (s[0] != ':' || s.size() > 6) return false;
  for (size_t i = 1; i < s.size(); ++i)
    if (!is(s[i], kDigit)) return false;
  return true;
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool isTokenChar(unsigned char c) noexcept { return (kClass[c] & kToken) != 0; }

bool isValidHost(std::string_view h) noexcept {
  if (h.empty()) return true;
  size_t i = 0;
  if (h[0] == '[') {
    // IP-literal: the inside is judged by its alphabet only (IPv6address or IPvFuture); the
    // brackets are what keeps its colons from reading as a port.
    size_t close = h.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (i = 1; i < close; ++i)
      if (!is(h[i], kIpLiteral)) return false;
    return validPortSuffix(h.substr(close + 1));
  }
  // reg-name or IPv4address (which is a reg-name too); may be empty before a port.
  while (i < h.size() && h[i] != ':') {
    if (h[i] == '%') {
      if (i + 2 >= h.size() || !is(h[i + 1], kHex) || !is(h[i + 2], kHex)) return false;
      i += 3;
      continue;
    }
    if (!is(h[i], kRegName)) return false;
    ++i;
  }
  return validPortSuffix(h.substr(i));
}

TargetForm classifyTarget(std::string_view t, bool connect, std::string_view* authority) noexcept {
  if (t.empty()) return TargetForm::kInvalid;
  if (connect) {
    // authority-form: uri-host ":" port, the port required (RFC 9112 §3.2.3).
    size_t colon = t.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == t.size() || t[0] == '/' ||
        !isValidHost(t) || (t[0] == '[' && t[colon - 1] != ']'))
      return TargetForm::kInvalid;
    *authority = t;
    return TargetForm::kAuthority;
  }
  if (t[0] == '/') return TargetForm::kOrigin;
  if (t == "*") return TargetForm::kAsterisk;
  // absolute-form: only the schemes a cache fleet serves; anything else an origin would
  // resolve in its own way.
  size_t scheme_end = t.find("://");
  if (scheme_end == std::string_view::npos) return TargetForm::kInvalid;
  std::string_view scheme = t.substr(0, scheme_end);
  if (!equalsNoCase(scheme, "http") && !equalsNoCase(scheme, "https")) return TargetForm::kInvalid;
  std::string_view rest = t.substr(scheme_end + 3);
  size_t end = rest.find_first_of("/?#");
  std::string_view auth = rest.substr(0, end);
  // userinfo is refused (RFC 9110 §4.2.4: treat it as an error); an empty authority names
  // no host at all.
  if (auth.empty() || auth.find('@') != std::string_view::npos || !isValidHost(auth))
    return TargetForm::kInvalid;
  *authority = auth;
  return TargetForm::kAbsolute;
}

bool addTransferCodings(std::string_view v, TransferCodings* out) noexcept {
  while (true) {
    size_t comma = v.find(',');
    std::string_view element = trimOws(v.substr(0, comma));
    if (!element.empty()) {
      for (char c : element)
        if (!is(c, kToken)) return false;   // whitespace inside, ';' parameters, quotes
      bool chunked = equalsNoCase(element, "chunked");
      ++out->codings;
      out->chunked += chunked ? 1 : 0;
      out->last_is_chunked = chunked;
    }
    if (comma == std::string_view::npos) return true;
    v.remove_prefix(comma + 1);
  }
}

bool isText(std::string_view s) noexcept {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

}  // namespace lb
