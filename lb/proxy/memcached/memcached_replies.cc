// The reply side of MemcachedSession: framing backend replies by the command they answer
// (the server connection's CacheWire), dropping the answers noreply and quiet mode asked
// not to get, merging a split get, and the errors lb answers for a backend that failed.
#include <cstring>

#include "lb/proxy/memcached/memcached_replies.h"

#include "lb/proxy/memcached/memcached_text.h"

namespace lb {

namespace {

class MemcachedWire final : public CacheWire {
 public:
  const char* name() const noexcept override { return "memcached"; }
  int64_t frameReply(uint8_t kind, const char* p, size_t n,
                     ReplyScan& scan) const noexcept override {
    return mc::scanReply(kind, p, n, scan);
  }
  bool isError(const char* p, size_t n) const noexcept override {
    return mc::isErrorReply(p, n);
  }
  // memcached's text protocol has no AUTH (SASL is binary-only).
  std::string handshake(std::string_view) const override { return {}; }
  bool handshakeOk(const char*, size_t) const noexcept override { return true; }
};

const MemcachedWire kWire;

bool startsWith(const char* p, size_t n, std::string_view prefix) noexcept {
  return n >= prefix.size() && memcmp(p, prefix.data(), prefix.size()) == 0;
}

}  // namespace

const CacheWire& memcachedWire() noexcept { return kWire; }

namespace mc {

namespace {

// memcached 1.6.18's quiet mode skips exactly these (proto_text.c: resp->skip under
// c->noreply): mg's EN, ms's and md's HD, ma's HD or VA, each with whatever flags it
// returns after a space. Everything else, errors included, is sent.
bool metaCode(const char* p, size_t n, const char* code) noexcept {
  return n >= 3 && p[0] == code[0] && p[1] == code[1] && (p[2] == ' ' || p[2] == '\r');
}

}  // namespace

bool dropReply(uint8_t quiet, const char* p, size_t n) noexcept {
  switch (quiet) {
    case kNoreply:   // memcached sends a noreply command nothing, not even an error
      return true;
    case kQuietGet:
      return metaCode(p, n, "EN");
    case kQuietStore:
      return metaCode(p, n, "HD");
    case kQuietMath:
      return metaCode(p, n, "HD") || startsWith(p, n, "VA ");
    default:
      return false;
  }
}

size_t planSize(const std::vector<std::string_view>& keys) noexcept {
  size_t n = 0;
  for (std::string_view k : keys) n += 4 + k.size();
  return n;
}

void writePlan(const std::vector<std::string_view>& keys, const uint16_t* fragment_of_key,
               char* out) noexcept {
  for (size_t k = 0; k < keys.size(); ++k) {
    const uint16_t len = static_cast<uint16_t>(keys[k].size());
    memcpy(out, &fragment_of_key[k], 2);
    memcpy(out + 2, &len, 2);
    memcpy(out + 4, keys[k].data(), keys[k].size());
    out += 4 + keys[k].size();
  }
}

// get k1 k2 ... split by owner: each fragment's reply holds the hits among its keys, in their
// order, then END. The client gets the hits of all its keys in its order, then one END: for
// each key of the plan, the next item of its fragment's reply if that item is this key's,
// else nothing (a miss).
void mergeValues(const FragmentReply* parts, uint16_t fragment_count, const char* plan,
                 uint32_t keys, std::vector<uint32_t>& at, ByteChain& out) noexcept {
  for (uint16_t f = 0; f < fragment_count; ++f) {
    const FragmentReply& r = parts[f];
    if (r.bytes == nullptr) {
      out.append("SERVER_ERROR lb: out of memory\r\n");
      return;
    }
    if (isErrorReply(r.bytes, r.len)) {
      out.append(r.bytes, r.len);
      return;
    }
  }
  try {
    at.assign(fragment_count, 0);
  } catch (...) {
    out.append("SERVER_ERROR lb: out of memory\r\n");
    return;
  }
  for (uint32_t k = 0; k < keys; ++k) {
    uint16_t f, len;
    memcpy(&f, plan, 2);
    memcpy(&len, plan + 2, 2);
    const std::string_view key(plan + 4, len);
    plan += 4 + len;
    const FragmentReply& r = parts[f];
    std::string_view item_key;
    size_t item_len = 0;
    if (at[f] < r.len && valueItem(r.bytes + at[f], r.len - at[f], &item_key, &item_len) &&
        item_key == key) {
      out.append(r.bytes + at[f], item_len);
      at[f] += static_cast<uint32_t>(item_len);
    }
  }
  out.append("END\r\n", 5);
}

}  // namespace mc
}  // namespace lb
