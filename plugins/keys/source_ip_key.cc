// `source_ip`: the affinity key is the client's address, as nginx's `ip_hash`/`hash
// $remote_addr` and Envoy's `connection_properties { source_ip }` do. Works on tcp and http.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>

#include "lb/core/hash.h"
#include "plugins/keys/key_plugins.h"

namespace lb {

bool ipKeyBytes(const sockaddr* addr, IpKeyBytes* out) noexcept {
  if (addr == nullptr) return false;
  if (addr->sa_family == AF_INET) {
    sockaddr_in a;
    memcpy(&a, addr, sizeof(a));
    memcpy(out->bytes, &a.sin_addr, 4);
    out->len = 4;
    out->port = ntohs(a.sin_port);
    return true;
  }
  if (addr->sa_family == AF_INET6) {
    sockaddr_in6 a;
    memcpy(&a, addr, sizeof(a));
    out->port = ntohs(a.sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
      memcpy(out->bytes, a.sin6_addr.s6_addr + 12, 4);
      out->len = 4;
    } else {
      memcpy(out->bytes, a.sin6_addr.s6_addr, 16);
      out->len = 16;
    }
    return true;
  }
  return false;
}

void appendIpKeyText(const IpKeyBytes& ip, bool with_port, char* out, size_t cap,
                     size_t* len) noexcept {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(ip.len == 4 ? AF_INET : AF_INET6, ip.bytes, text, sizeof text) == nullptr)
    text[0] = '\0';
  char port[8] = "";
  if (with_port) snprintf(port, sizeof port, "%u", static_cast<unsigned>(ip.port));
  const bool brackets = with_port && ip.len == 16;
  auto put = [&](const char* s) {
    for (; *s != '\0' && *len < cap; ++s) out[(*len)++] = *s;
  };
  if (brackets) put("[");
  put(text);
  if (brackets) put("]");
  if (with_port) {
    put(":");
    put(port);
  }
}

namespace {

// The address bytes only (network order), never the port or a formatted string: hashing
// "10.0.0.1" text would make the key depend on formatting, and the port changes with every
// connection.
class SourceIpKey final : public KeyPlugin {
 public:
  bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept override {
    IpKeyBytes ip;
    if (!ipKeyBytes(ctx.peer, &ip)) return false;
    *hash = hashKeyBytes(key_hash,
                         std::string_view(reinterpret_cast<const char*>(ip.bytes), ip.len));
    if (ctx.text_out != nullptr) {
      size_t len = 0;
      appendIpKeyText(ip, false, ctx.text_out->scratch, KeyText::kScratch, &len);
      ctx.text_out->bytes = std::string_view(ctx.text_out->scratch, len);
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<KeyPlugin> buildSourceIpKey(const HashPolicy&) {
  return std::make_unique<SourceIpKey>();
}

}  // namespace lb
