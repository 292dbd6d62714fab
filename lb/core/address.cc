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

// RFC 1123 §2.1 host name syntax, plus '_' (service names such as Docker Compose's use it
// and resolvers pass it through). The last label is not all digits: "10.0.0" is a typo of an
// address, not a name (no top-level domain is numeric).
bool isHostName(std::string_view host) {
  if (host.empty()) return false;
  if (host.back() == '.') host.remove_suffix(1);   // a fully qualified "name."
  if (host.empty() || host.size() > 253) return false;
  bool last_all_digits = true;
  size_t label = 0;
  for (size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      if (label == 0 || label > 63) return false;
      if (host[i - 1] == '-' || host[i - label] == '-') return false;
      if (i < host.size()) last_all_digits = true;
      label = 0;
      continue;
    }
    char c = host[i];
    bool digit = c >= '0' && c <= '9';
    bool ok = digit || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
    if (!ok) return false;
    if (!digit) last_all_digits = false;
    ++label;
  }
  return !last_all_digits;
}

}  // namespace

bool parseHostPort(std::string_view text, HostPort* out, std::string* error,
                   PortZero port_zero) {
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
  HostPort parsed;
  if (v6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&parsed.address);
    if (inet_pton(AF_INET6, host.c_str(), &sin6->sin6_addr) != 1) {
      *error = quoted(text) + ": '" + host + "' is not a numeric IPv6 address";
      return false;
    }
    if (!parsePort(text, port, port_zero, &parsed.port, error)) return false;
    sin6->sin6_family = AF_INET6;
    parsed.address_len = sizeof(sockaddr_in6);
    parsed.numeric = true;
  } else {
    auto* sin = reinterpret_cast<sockaddr_in*>(&parsed.address);
    // inet_pton accepts only the dotted-quad form: no "127.1", no octal, no hex.
    if (inet_pton(AF_INET, host.c_str(), &sin->sin_addr) == 1) {
      sin->sin_family = AF_INET;
      parsed.address_len = sizeof(sockaddr_in);
      parsed.numeric = true;
    } else if (!isHostName(host)) {
      *error = quoted(text) + ": '" + host + "' is neither a numeric IPv4 address, a "
               "bracketed IPv6 address nor a host name";
      return false;
    }
    if (!parsePort(text, port, port_zero, &parsed.port, error)) return false;
  }
  if (parsed.numeric) setAddressPort(&parsed.address, parsed.port);
  parsed.host = std::move(host);
  *out = std::move(parsed);
  return true;
}

bool parseAddress(std::string_view text, sockaddr_storage* out, socklen_t* len,
                  std::string* error, PortZero port_zero) {
  HostPort parsed;
  if (!parseHostPort(text, &parsed, error, port_zero)) return false;
  if (!parsed.numeric) {
    *error = quoted(text) + ": host must be a numeric IPv4 address or a bracketed IPv6 "
             "address";
    return false;
  }
  *out = parsed.address;
  *len = parsed.address_len;
  return true;
}

void setAddressPort(sockaddr_storage* address, uint16_t port) {
  if (address->ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(address)->sin_port = htons(port);
  else if (address->ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(address)->sin6_port = htons(port);
}

bool sameAddress(const sockaddr_storage& a, socklen_t a_len, const sockaddr_storage& b,
                 socklen_t b_len) {
  return a_len == b_len && memcmp(&a, &b, a_len) == 0;
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
