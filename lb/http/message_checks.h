// What RFC 9110 and RFC 9112 require of a message head that llhttp leaves to its caller: the
// syntax of a Host value and of a request-target, the Transfer-Encoding list, the reason
// phrase. HttpParser (lb/http/parser.h) applies them once a head is complete, so the proxy,
// the admin server and lb-origin refuse the same requests. Pure functions over views: no
// allocation, one pass over the bytes, any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace lb {

// RFC 9110 §5.6.2 tchar.
bool isTokenChar(unsigned char c) noexcept;

// A Host field value (RFC 9110 §7.2): uri-host [ ":" port ] as RFC 3986 §3.2.2 spells it
// (reg-name with pct-encoding, IPv4, or an IP-literal in brackets), port at most 5 digits.
// Empty is valid: RFC 9110 §7.2 asks for an empty Host when the target has no authority.
// No userinfo, no whitespace, no path.
bool isValidHost(std::string_view host) noexcept;

// The four request-target forms of RFC 9112 §3.2, and what lb refuses.
enum class TargetForm : uint8_t {
  kOrigin,      // "/path?query"
  kAbsolute,    // "http://authority/path?query" (http or https only, no userinfo)
  kAuthority,   // "host:port" (CONNECT only)
  kAsterisk,    // "*" (OPTIONS only)
  kInvalid,
};
// Classifies `target`; for kAbsolute and kAuthority, *authority is the authority part.
// Validity of the characters is llhttp's (strict); this judges the structure.
TargetForm classifyTarget(std::string_view target, bool connect,
                          std::string_view* authority) noexcept;

// One Transfer-Encoding field value read as a list of transfer codings (RFC 9112 §6.1):
// comma-separated tokens with optional whitespace, empty elements ignored (RFC 9110 §5.6.1).
// lb accepts no transfer-parameters (";q=..."): nothing that caches speak uses them, and a
// parameter is one more place where two parsers could disagree.
struct TransferCodings {
  uint32_t codings = 0;          // non-empty elements
  uint32_t chunked = 0;          // of which "chunked" (case-insensitive)
  bool last_is_chunked = false;  // the last non-empty element is "chunked"
};
// False when the value is not such a list; otherwise adds this value's codings to *out (call
// it for every Transfer-Encoding line in order: the last line's last coding is the final one).
bool addTransferCodings(std::string_view value, TransferCodings* out) noexcept;

// *( HTAB / SP / VCHAR / obs-text ): a reason-phrase (RFC 9112 §4), and every byte a
// quoted-string may hold, its quotes and quoted-pairs included (RFC 9110 §5.6.4).
bool isText(std::string_view s) noexcept;
inline bool isValidReason(std::string_view reason) noexcept { return isText(reason); }

}  // namespace lb
