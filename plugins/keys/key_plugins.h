// The built-in key plugins (design.md, "Key plugins"): one builder per plugin for
// plugins/builtin.cc, and the pure parsing helpers behind them, exposed so that unit tests
// and the key fuzzer can drive them directly.
//
// Every helper here runs on the request path: no allocation, no locks, no throw. Views point
// into the caller's buffers and are valid as long as those are.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "lb/config.h"
#include "plugins/key.h"

namespace lb {

// Builders registered in plugins/builtin.cc. Each keeps what it needs of the policy (a copy
// of the name); the policy may be destroyed afterwards.
std::unique_ptr<KeyPlugin> buildHeaderKey(const HashPolicy& policy);
std::unique_ptr<KeyPlugin> buildCookieKey(const HashPolicy& policy);
std::unique_ptr<KeyPlugin> buildSourceIpKey(const HashPolicy& policy);
std::unique_ptr<KeyPlugin> buildFiveTupleKey(const HashPolicy& policy);
std::unique_ptr<KeyPlugin> buildQueryKey(const HashPolicy& policy);
std::unique_ptr<KeyPlugin> buildPathKey(const HashPolicy& policy);

// ASCII case-insensitive equality (header names are case-insensitive, RFC 9110 §5.1).
bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept;

// The value of the first header named `name` (case-insensitive) with leading and trailing
// spaces and tabs removed (RFC 9110 §5.5 OWS), or nullopt when no such header. A header that
// is present with an empty value yields an empty view: present, not absent.
std::optional<std::string_view> findHeader(const HttpRequestView& request,
                                           std::string_view name) noexcept;

// The value of cookie `name` in one Cookie header value ("a=b; c=d", RFC 6265 §4.2.1), with
// one pair of surrounding double quotes removed (RFC 6265 §4.1.1 allows a quoted value), or
// nullopt when absent. Cookie names are case-sensitive. The first occurrence wins.
std::optional<std::string_view> findCookie(std::string_view cookie_header,
                                           std::string_view name) noexcept;

// The value of query parameter `name` in a request-target ("/p?a=1&b=2"): the first
// occurrence wins; "?a" and "?a=" both give an empty value; a '#' fragment (which clients
// should not send, but some do) ends the query. Names compare exactly (case-sensitive) and
// nothing is percent-decoded: "?k=a%20b" yields "a%20b", and "?k%3D=1" does not match "k=".
// That keeps it allocation-free and matches what a cache keyed on the raw URL sees.
std::optional<std::string_view> findQueryParam(std::string_view target,
                                               std::string_view name) noexcept;

// The path of a request-target, without query or fragment and not percent-decoded:
// "/a/b?x=1" -> "/a/b". An absolute-form target ("http://host:80/a?x", RFC 9112 §3.2.2) gives
// its path ("/a", or "/" when it has none). "*" (OPTIONS) gives "*". Empty target -> empty.
std::string_view targetPath(std::string_view target) noexcept;

// An IP address as key bytes: 4 for IPv4 and for IPv4-mapped IPv6 (::ffff:a.b.c.d, what a
// dual-stack socket reports for an IPv4 client, so one client hashes the same either way),
// 16 for other IPv6. port is in host byte order.
struct IpKeyBytes {
  uint8_t bytes[16];
  uint8_t len = 0;
  uint16_t port = 0;
};
// False for nullptr or a family other than AF_INET/AF_INET6.
bool ipKeyBytes(const sockaddr* addr, IpKeyBytes* out) noexcept;

// The fixed 37-byte five_tuple layout: src ip (16, IPv4 as ::ffff:a.b.c.d), src port (2, big
// endian), dst ip (16), dst port (2, big endian), protocol (1, IPPROTO_TCP). False when either
// address is missing or not IP.
inline constexpr size_t kFiveTupleBytes = 37;
bool fiveTupleBytes(const sockaddr* src, const sockaddr* dst, uint8_t (&out)[kFiveTupleBytes]) noexcept;

// Fills `value` with 32 lowercase hex characters from a per-thread xoshiro256** generator,
// seeded once per thread from getrandom(2): no syscall after the first call on a thread.
void generateCookieValue(char (&value)[32]) noexcept;

}  // namespace lb
