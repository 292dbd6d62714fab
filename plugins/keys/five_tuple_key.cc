// `five_tuple`: the affinity key is the connection's (src ip, src port, dst ip, dst port,
// protocol), so each connection picks independently but keeps its backend for its lifetime:
// the right key for pooled memcached/Redis clients that spread their own connections.
#include <netinet/in.h>

#include <cstring>

#include "lb/core/hash.h"
#include "plugins/keys/key_plugins.h"

namespace lb {
namespace {

// Writes addr as 16 bytes (IPv4 as ::ffff:a.b.c.d) and its port as 2 big-endian bytes.
void putEndpoint(const IpKeyBytes& ip, uint8_t* out) noexcept {
  if (ip.len == 4) {
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    memcpy(out + 12, ip.bytes, 4);
  } else {
    memcpy(out, ip.bytes, 16);
  }
  out[16] = static_cast<uint8_t>(ip.port >> 8);
  out[17] = static_cast<uint8_t>(ip.port & 0xff);
}

}  // namespace

bool fiveTupleBytes(const sockaddr* src, const sockaddr* dst,
                    uint8_t (&out)[kFiveTupleBytes]) noexcept {
  IpKeyBytes s, d;
  if (!ipKeyBytes(src, &s) || !ipKeyBytes(dst, &d)) return false;
  // One layout for both families, so an IPv4 client seen through a dual-stack socket
  // (v4-mapped) hashes the same as through an IPv4 socket.
  putEndpoint(s, out);
  putEndpoint(d, out + 18);
  out[36] = IPPROTO_TCP;   // lb's listeners are all TCP (http runs over it too)
  return true;
}

namespace {

class FiveTupleKey final : public KeyPlugin {
 public:
  bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept override {
    uint8_t bytes[kFiveTupleBytes];
    if (!fiveTupleBytes(ctx.peer, ctx.local, bytes)) return false;
    *hash = hashKeyBytes(key_hash, std::string_view(reinterpret_cast<const char*>(bytes),
                                                    sizeof(bytes)));
    if (ctx.text_out != nullptr) {
      // Shown as "src:port->dst:port"; the addresses parse again, they were read above.
      IpKeyBytes s, d;
      ipKeyBytes(ctx.peer, &s);
      ipKeyBytes(ctx.local, &d);
      size_t len = 0;
      char* out = ctx.text_out->scratch;
      appendIpKeyText(s, true, out, KeyText::kScratch, &len);
      for (const char* arrow = "->"; *arrow != '\0' && len < KeyText::kScratch; ++arrow)
        out[len++] = *arrow;
      appendIpKeyText(d, true, out, KeyText::kScratch, &len);
      ctx.text_out->bytes = std::string_view(out, len);
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<KeyPlugin> buildFiveTupleKey(const HashPolicy&) {
  return std::make_unique<FiveTupleKey>();
}

}  // namespace lb
