// The built-in key plugins (docs/architecture.md, "Key plugins"): one builder per plugin for
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

#include "lb/core/http_fields.h"
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

// Appends `ip` as text at out[*len] ("10.0.0.1", "2001:db8::1"; with_port: "10.0.0.1:5000",
// "[2001:db8::1]:5000"), never past `cap`: what /hotkeys shows of an address key. No
// allocation, no syscall (inet_ntop formats in place).
void appendIpKeyText(const IpKeyBytes& ip, bool with_port, char* out, size_t cap,
                     size_t* len) noexcept;

// The fixed 37-byte five_tuple layout: src ip (16, IPv4 as ::ffff:a.b.c.d), src port (2, big
// endian), dst ip (16), dst port (2, big endian), protocol (1, IPPROTO_TCP). False when either
// address is missing or not IP.
inline constexpr size_t kFiveTupleBytes = 37;
bool fiveTupleBytes(const sockaddr* src, const sockaddr* dst, uint8_t (&out)[kFiveTupleBytes]) noexcept;

// Fills `value` with 32 lowercase hex characters from a per-thread xoshiro256** generator,
// seeded once per thread from getrandom(2): no syscall after the first call on a thread.
void generateCookieValue(char (&value)[32]) noexcept;

}  // namespace lb
