// Socket addresses as the config writes them: "127.0.0.1:9001", "0.0.0.0:8080", "[::1]:9001".
// Hosts are numeric only: lb never resolves a name, so a config means the same thing on
// every start and a reload never blocks on DNS (HAProxy resolves at start, and its users
// learn the hard way that a name which moved is not followed).
#pragma once

#include <sys/socket.h>

#include <string>
#include <string_view>

namespace lb {

// Port 0 asks the kernel for any free port: right for a server a test starts and asks for
// its port (the admin server, lb-origin), never in a config, where it would change on
// every start.
enum class PortZero { kRefuse, kAllow };

// Parses "a.b.c.d:port" or "[v6]:port" (port 1-65535, decimal; 0 too with PortZero::kAllow)
// into *out and *len, ready for bind() or connect(). On failure returns false, leaves *out
// untouched and sets *error to a message that quotes the text and says what to write
// instead. The one address parser of lb and lb-origin. Pure; any thread.
bool parseAddress(std::string_view text, sockaddr_storage* out, socklen_t* len,
                  std::string* error, PortZero port_zero = PortZero::kRefuse);

// "127.0.0.1:9001" or "[::1]:9001"; "?" for a family other than AF_INET or AF_INET6.
std::string formatAddress(const sockaddr* address);

// True when binding both would compete for the same connections: the same port and the same
// address, or one of them the wildcard (0.0.0.0, or [::], which also takes IPv4 on Linux
// unless IPV6_V6ONLY is set).
bool addressesOverlap(const sockaddr* a, const sockaddr* b);

}  // namespace lb
