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

  // Handover reads (lb/proxy/cache/handover_reads.h). A get, gets, gat or gats of one key
  // misses with a bare END; an mg with EN, and the O and k flags it asked for, if any.
  bool handsOver() const noexcept override { return true; }
  bool isMiss(const char* p, size_t n) const noexcept override {
    if (n == 5 && memcmp(p, "END\r\n", 5) == 0) return true;
    return n >= 4 && p[0] == 'E' && p[1] == 'N' && (p[2] == '\r' || p[2] == ' ') &&
           p[n - 2] == '\r' && p[n - 1] == '\n';
  }
  std::string_view missReply() const noexcept override { return "END\r\n"; }
  // mg with the value, the client flags and the remaining TTL in seconds, in one reply:
  // "VA <size> f<flags> t<ttl>" and the data block, or EN.
  uint32_t appendHandoverRead(ByteChain& out, std::string_view key) const noexcept override {
    out.append("mg ");
    out.append(key);
    out.append(" v f t\r\n");
    return 1;
  }
  uint8_t handoverKind(HandoverOp op) const noexcept override {
    return op == HandoverOp::kRead   ? mc::kReplyMetaValue
           : op == HandoverOp::kCopy ? mc::kReplyStore
                                     : mc::kReplyDelete;
  }
  HandoverFound handoverFound(const FragmentReply* r, uint32_t count) const noexcept override {
    HandoverFound found;
    if (count != 1 || r[0].bytes == nullptr) {
      found.result = HandoverRead::kError;
      return found;
    }
    const std::string_view reply(r[0].bytes, r[0].len);
    if (reply.starts_with("EN")) return found;   // a miss
    const size_t eol = reply.find("\r\n");
    if (!reply.starts_with("VA ") || eol == std::string_view::npos) {
      found.result = HandoverRead::kError;
      return found;
    }
    // "VA <size> f<flags> t<ttl>": the flags in any order, as memcached returns them.
    uint64_t size = 0, flags = 0;
    int64_t ttl = -1;
    bool have_size = false, have_flags = false, have_ttl = false;
    size_t at = 3;
    while (at < eol) {
      size_t end = reply.find(' ', at);
      if (end == std::string_view::npos || end > eol) end = eol;
      const std::string_view token = reply.substr(at, end - at);
      if (!have_size) {
        have_size = parseDecimal(token, &size);
      } else if (token.size() > 1 && token[0] == 'f') {
        have_flags = parseDecimal(token.substr(1), &flags) && flags <= UINT32_MAX;
      } else if (token == "t-1") {
        have_ttl = true;
      } else if (token.size() > 1 && token[0] == 't') {
        uint64_t t = 0;
        have_ttl = parseDecimal(token.substr(1), &t);
        ttl = static_cast<int64_t>(t);
      }
      at = end + 1;
    }
    if (!have_size || !have_flags || !have_ttl || reply.size() != eol + 2 + size + 2) {
      found.result = HandoverRead::kError;
      return found;
    }
    found.result = HandoverRead::kHit;
    found.value = reply.substr(eol + 2, size);
    found.flags = static_cast<uint32_t>(flags);
    found.ttl_ms = ttl < 0 ? HandoverFound::kNoTtl : ttl * 1000;
    return found;
  }
  // add: stored only where the owner has nothing; the exptime in whole seconds, at least 1
  // (0 would be "never").
  void appendCopy(ByteChain& out, std::string_view key, const HandoverFound& found,
                  int64_t ttl_ms) const noexcept override {
    out.append("add ");
    out.append(key);
    out.append(" ");
    out.appendDecimal(found.flags);
    out.append(" ");
    // exptime 0: never (a replica's copy of an item that has none).
    out.appendDecimal(ttl_ms == HandoverFound::kNoTtl ? 0 : ttl_ms < 1000 ? 1 : (ttl_ms + 999) / 1000);
    out.append(" ");
    out.appendDecimal(static_cast<int64_t>(found.value.size()));
    out.append("\r\n");
    out.append(found.value);
    out.append("\r\n");
  }
  void appendDelete(ByteChain& out, std::string_view key) const noexcept override {
    out.append("delete ");
    out.append(key);
    out.append("\r\n");
  }
  HandoverWrite handoverWritten(const char* p, size_t n) const noexcept override {
    const std::string_view reply(p, n);
    if (reply == "STORED\r\n" || reply == "DELETED\r\n") return HandoverWrite::kDone;
    if (reply == "NOT_STORED\r\n" || reply == "NOT_FOUND\r\n") return HandoverWrite::kNotDone;
    return HandoverWrite::kError;
  }

 private:
  static bool parseDecimal(std::string_view s, uint64_t* out) noexcept {
    if (s.empty() || s.size() > 19) return false;
    uint64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    *out = v;
    return true;
  }
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

namespace {

// Walks the plan's keys in order against the fragments' replies (every one there, none an
// error line): fn(k, item) with key k's item, the next item of its fragment's reply if that
// item is this key's, else an empty view (a miss). False when the cursors (`at`, one per
// fragment) cannot be made.
template <class Fn>
bool walkPlan(const FragmentReply* parts, uint16_t fragment_count, const char* plan,
              uint32_t keys, std::vector<uint32_t>& at, Fn&& fn) noexcept {
  try {
    at.assign(fragment_count, 0);
  } catch (...) {
    return false;
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
      fn(k, std::string_view(r.bytes + at[f], item_len));
      at[f] += static_cast<uint32_t>(item_len);
    } else {
      fn(k, std::string_view());
    }
  }
  return true;
}

}  // namespace

// get k1 k2 ... split by owner: each fragment's reply holds the hits among its keys, in their
// order, then END. The client gets the hits of all its keys in its order, then one END; a key
// its owner missed and a handover read found comes from that read (an override).
void mergeValues(const FragmentReply* parts, uint16_t fragment_count, const char* plan,
                 uint32_t keys, std::vector<uint32_t>& at, ByteChain& out,
                 const HandoverKeyRead* overrides, uint32_t override_count) noexcept {
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
  uint32_t next = 0;   // the next override
  const bool walked = walkPlan(parts, fragment_count, plan, keys, at,
                               [&](uint32_t k, std::string_view item) {
    if (!item.empty()) {
      out.append(item.data(), item.size());
      return;
    }
    while (next < override_count && overrides[next].position < k) ++next;
    if (next < override_count && overrides[next].position == k && overrides[next].reply_len > 5)
      out.append(overrides[next].reply, overrides[next].reply_len - 5);   // without its END
  });
  if (!walked) {
    out.append("SERVER_ERROR lb: out of memory\r\n");
    return;
  }
  out.append("END\r\n", 5);
}

uint32_t missedKeys(const FragmentReply* parts, uint16_t fragment_count, const char* plan,
                    uint32_t keys, std::vector<uint32_t>& at, uint32_t* positions,
                    uint32_t cap) noexcept {
  for (uint16_t f = 0; f < fragment_count; ++f)
    if (parts[f].bytes == nullptr || isErrorReply(parts[f].bytes, parts[f].len)) return 0;
  uint32_t missed = 0;
  const bool walked = walkPlan(parts, fragment_count, plan, keys, at,
                               [&](uint32_t k, std::string_view item) {
    if (item.empty() && missed < cap) positions[missed++] = k;
  });
  return walked ? missed : 0;
}

}  // namespace mc
}  // namespace lb
