#include "lb/core/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace lb {

namespace {

const char kExample[] = "e.g. 127.0.0.1:9001 or [::1]:9001";

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// Decimal 1-65535 (0-65535 with PortZero::kAllow), no sign, no leading '+', at most 5 digits.
bool parsePort(std::string_view text, std::string_view port, PortZero port_zero, uint16_t* out,
               std::string* error) {
  if (port.empty()) {
    *error = quoted(text) + " has no port (use host:port, " + kExample + ")";
    return false;
  }
  uint32_t n = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || n > 65535) {
      *error = quoted(text) + ": port must be a number 1-65535, got '" + std::string(port) + "'";
      return false;
    }
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  const uint32_t lowest = port_zero == PortZero::kAllow ? 0 : 1;
  if (n < lowest || n > 65535) {
    *error = quoted(text) + ": port must be " + std::to_string(lowest) + "-65535, got " +
             std::to_string(n);
    return false;
  }
  *out = static_cast<uint16_t>(n);
  return true;
}

}  // namespace

bool parseAddress(std::string_view text, sockaddr_storage* out, socklen_t* len,
                  std::string* error, PortZero port_zero) {
  if (text.empty()) {
    *error = std::string("address is empty (use host:port, ") + kExample + ")";
    return false;
  }
  std::string host;
  std::string_view port;
  bool v6 = false;
  if (text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) {
      *error = quoted(text) + ": missing ']' after the IPv6 address";
      return false;
    }
    host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest[0] != ':') {
      *error = quoted(text) + " has no port (use host:port, " + kExample + ")";
      return false;
    }
    port = rest.substr(1);
    v6 = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      *error = quoted(text) + " has no port (use host:port, " + kExample + ")";
      return false;
    }
    if (text.find(':') != colon) {
      *error = quoted(text) + ": write an IPv6 address in brackets, e.g. [::1]:9001";
      return false;
    }
    host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    *error = quoted(text) + " has no host (use 0.0.0.0 or [::] for every address)";
    return false;
  }
  uint16_t port_number = 0;
  sockaddr_storage storage{};
  if (v6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (inet_pton(AF_INET6, host.c_str(), &sin6->sin6_addr) != 1) {
      *error = quoted(text) + ": '" + host + "' is not a numeric IPv6 address";
      return false;
    }
    if (!parsePort(text, port, port_zero, &port_number, error)) return false;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port_number);
    *len = sizeof(sockaddr_in6);
  } else {
    auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
    // inet_pton accepts only the dotted-quad form: no "127.1", no octal, no hex.
    if (inet_pton(AF_INET, host.c_str(), &sin->sin_addr) != 1) {
      *error = quoted(text) + ": host must be a numeric IPv4 address or a bracketed IPv6 "
               "address (lb does not resolve names)";
      return false;
    }
    if (!parsePort(text, port, port_zero, &port_number, error)) return false;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port_number);
    *len = sizeof(sockaddr_in);
  }
  *out = storage;
  return true;
}

std::string formatAddress(const sockaddr* address) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(sin->sin_port));
  }
  if (address->sa_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(address);
    inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(sin6->sin6_port));
  }
  return "?";
}

namespace {

struct Endpoint {
  int family = 0;
  uint16_t port = 0;
  bool wildcard = false;
  unsigned char bytes[16] = {};
};

Endpoint endpointOf(const sockaddr* a) {
  Endpoint e;
  e.family = a->sa_family;
  if (a->sa_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a);
    e.port = ntohs(sin->sin_port);
    memcpy(e.bytes, &sin->sin_addr, 4);
    e.wildcard = sin->sin_addr.s_addr == htonl(INADDR_ANY);
  } else if (a->sa_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a);
    e.port = ntohs(sin6->sin6_port);
    memcpy(e.bytes, &sin6->sin6_addr, 16);
    e.wildcard = IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
  }
  return e;
}

}  // namespace

bool addressesOverlap(const sockaddr* a, const sockaddr* b) {
  Endpoint x = endpointOf(a);
  Endpoint y = endpointOf(b);
  if (x.port != y.port || x.family == 0 || y.family == 0) return false;
  if (x.family == y.family)
    return x.wildcard || y.wildcard || memcmp(x.bytes, y.bytes, sizeof x.bytes) == 0;
  // Mixed families: only [::] (dual-stack by default) reaches the IPv4 side.
  return (x.family == AF_INET6 && x.wildcard) || (y.family == AF_INET6 && y.wildcard);
}

}  // namespace lb
