// Socket addresses as the config writes them: "127.0.0.1:9001", "0.0.0.0:8080", "[::1]:9001",
// and, for backends, "cache-1.internal:11211". This file only parses and formats: names are
// resolved on the main thread by lb/app/resolver.h, never here and never on a worker.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace lb {

// Port 0 asks the kernel for any free port: right for a server a test starts and asks for
// its port (the admin server, lb-origin), never in a config, where it would change on
// every start.
enum class PortZero { kRefuse, kAllow };

// "host:port" taken apart. A numeric host (dotted-quad IPv4, bracketed IPv6) is converted
// at once into `address`; any other host is a DNS name, kept as text for a resolver.
struct HostPort {
  std::string host;             // as written, without brackets
  uint16_t port = 0;
  bool numeric = false;
  sockaddr_storage address{};   // numeric only: ready for bind() or connect()
  socklen_t address_len = 0;
};

// Parses "a.b.c.d:port", "[v6]:port" or "name:port" (port 1-65535, decimal; 0 too with
// PortZero::kAllow). A name must be a host name as RFC 1123 writes them (labels of letters,
// digits, '-' and '_', at most 63 bytes each and 253 in all, an optional final dot) whose
// last label is not all digits, so "127.1" or "256.0.0.1" is refused as a malformed IPv4
// address instead of being read the way inet_aton would. On failure returns false, leaves
// *out untouched and sets *error to a message that quotes the text and says what to write
// instead. Pure; any thread.
bool parseHostPort(std::string_view text, HostPort* out, std::string* error,
                   PortZero port_zero = PortZero::kRefuse);

// The numeric-only form: parseHostPort, refusing names. Fills *out and *len, ready for
// bind() or connect(). Listen addresses, lb-origin and the tests use it.
bool parseAddress(std::string_view text, sockaddr_storage* out, socklen_t* len,
                  std::string* error, PortZero port_zero = PortZero::kRefuse);

// Sets the port of an AF_INET or AF_INET6 address (a resolver answers without one).
void setAddressPort(sockaddr_storage* address, uint16_t port);

// "127.0.0.1:9001" or "[::1]:9001"; "?" for a family other than AF_INET or AF_INET6.
std::string formatAddress(const sockaddr* address);

// True when both hold the same family, IP and port (the bytes a connect() would use).
bool sameAddress(const sockaddr_storage& a, socklen_t a_len, const sockaddr_storage& b,
                 socklen_t b_len);

// True when binding both would compete for the same connections: the same port and the same
// address, or one of them the wildcard (0.0.0.0, or [::], which also takes IPv4 on Linux
// unless IPV6_V6ONLY is set).
bool addressesOverlap(const sockaddr* a, const sockaddr* b);

}  // namespace lb
