// The reply side of the Redis protocol: RESP2 framing of backend replies and the AUTH
// handshake (the server connection's CacheWire), and the merge of a split command's replies.
#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/redis_tracking.h"

#include <cstdio>
#include <cstring>

#include "lb/proxy/redis/resp.h"

namespace lb {

namespace {

bool integerReply(const FragmentReply& r, int64_t* out) noexcept;

class RedisWire final : public CacheWire {
 public:
  const char* name() const noexcept override { return "redis"; }
  int64_t frameReply(uint8_t kind, const char* p, size_t n,
                     ReplyScan& scan) const noexcept override {
    if (n > 0 && p[0] != '-') {
      const char want = kind == redis::kArrayReply     ? '*'
                        : kind == redis::kIntegerReply ? ':'
                        : kind == redis::kOkReply      ? '+'
                                                       : p[0];
      if (p[0] != want) return -1;
    }
    const int64_t len = resp::scanValue(p, n, scan);
    if (len > 0 && kind == redis::kOkReply && p[0] == '+' &&
        !(len == 5 && memcmp(p, "+OK\r\n", 5) == 0))
      return -1;
    return len;
  }
  uint8_t handshakeKind() const noexcept override { return redis::kOkReply; }
  bool isError(const char* p, size_t n) const noexcept override { return n > 0 && p[0] == '-'; }
  std::string handshake(std::string_view password) const override {
    if (password.empty()) return {};
    std::string out = "*2\r\n$4\r\nAUTH\r\n$" + std::to_string(password.size()) + "\r\n";
    out.append(password);
    out += "\r\n";
    return out;
  }
  bool handshakeOk(const char* p, size_t n) const noexcept override {
    return n == 5 && memcmp(p, "+OK\r\n", 5) == 0;
  }
  NearTracker* newTracker(WorkerEnv& env, const ServerGroup& group) const override {
    return new RedisTracker(env, group, redis::kOkReply);
  }

  // Handover reads (lb/proxy/cache/handover_reads.h). GET's miss is a nil bulk.
  bool handsOver() const noexcept override { return true; }
  bool isMiss(const char* p, size_t n) const noexcept override {
    return n == 5 && memcmp(p, "$-1\r\n", 5) == 0;
  }
  std::string_view missReply() const noexcept override { return "$-1\r\n"; }
  // GET and PTTL, pipelined on one connection: Redis runs them back to back unless another
  // client's command falls between, which can only make the TTL read later (shorter) or
  // find the key gone (-2: nothing is copied).
  uint32_t appendHandoverRead(ByteChain& out, std::string_view key) const noexcept override {
    appendKeyCommand(out, "*2\r\n$3\r\nGET\r\n", key);
    appendKeyCommand(out, "*2\r\n$4\r\nPTTL\r\n", key);
    return 2;
  }
  uint32_t handoverReadReplies() const noexcept override { return 2; }
  uint8_t handoverKind(HandoverOp) const noexcept override { return redis::kAnyReply; }
  HandoverFound handoverFound(const FragmentReply* r, uint32_t count) const noexcept override {
    HandoverFound found;
    if (count != 2 || r[0].len < 5) {
      found.result = HandoverRead::kError;
      return found;
    }
    // A nil is a miss; an error (WRONGTYPE: the key is not a string there) is the owner's
    // miss, counted as an error.
    if (r[0].bytes[0] != '$') {
      found.result = r[0].bytes[0] == '-' ? HandoverRead::kError : HandoverRead::kMiss;
      return found;
    }
    if (isMiss(r[0].bytes, r[0].len)) return found;
    int64_t pttl = 0;
    if (!integerReply(r[1], &pttl)) pttl = 0;   // an error: copy nothing
    found.result = HandoverRead::kHit;
    found.reply = {r[0].bytes, r[0].len};
    found.value = found.reply;   // the bulk as it is: SET's value argument, encoded alike
    found.ttl_ms = pttl == -1 ? HandoverFound::kNoTtl : (pttl < 0 ? 0 : pttl);
    return found;
  }
  // SET key value PX ttl NX: the owner keeps whatever it has (without a TTL, SET key value NX).
  void appendCopy(ByteChain& out, std::string_view key, const HandoverFound& found,
                  int64_t ttl_ms) const noexcept override {
    if (ttl_ms == HandoverFound::kNoTtl) {
      appendKeyCommand(out, "*4\r\n$3\r\nSET\r\n", key);
      out.append(found.value);
      out.append("$2\r\nNX\r\n");
      return;
    }
    appendKeyCommand(out, "*6\r\n$3\r\nSET\r\n", key);
    out.append(found.value);
    char ttl[24];
    const int len = snprintf(ttl, sizeof ttl, "%lld", static_cast<long long>(ttl_ms));
    out.append("$2\r\nPX\r\n$");
    out.appendDecimal(len);
    out.append("\r\n");
    out.append(ttl, static_cast<size_t>(len));
    out.append("\r\n$2\r\nNX\r\n");
  }
  void appendDelete(ByteChain& out, std::string_view key) const noexcept override {
    appendKeyCommand(out, "*2\r\n$3\r\nDEL\r\n", key);
  }
  // +OK: stored; a nil: NX found the key; :n: a delete done.
  HandoverWrite handoverWritten(const char* p, size_t n) const noexcept override {
    if (n > 0 && (p[0] == '+' || p[0] == ':')) return HandoverWrite::kDone;
    if (isMiss(p, n)) return HandoverWrite::kNotDone;
    return HandoverWrite::kError;
  }

 private:
  // `head` (the array header and the command's name), then the key as a bulk string.
  static void appendKeyCommand(ByteChain& out, std::string_view head, std::string_view key) {
    out.append(head);
    out.append("$");
    out.appendDecimal(static_cast<int64_t>(key.size()));
    out.append("\r\n");
    out.append(key);
    out.append("\r\n");
  }
};

const RedisWire kWire;

// The integer of a ":n\r\n" reply.
bool integerReply(const FragmentReply& r, int64_t* out) noexcept {
  if (r.bytes == nullptr || r.len < 4 || r.bytes[0] != ':') return false;
  if (r.bytes[r.len - 2] != '\r' || r.bytes[r.len - 1] != '\n') return false;
  return resp::parseInteger({r.bytes + 1, r.len - 3}, out);
}

// The element count of a "*n\r\n..." reply, and where its first element starts.
bool arrayHeader(const FragmentReply& r, int64_t* count, uint32_t* first) noexcept {
  if (r.len < 4 || r.bytes[0] != '*') return false;
  const char* cr = static_cast<const char*>(memchr(r.bytes, '\r', r.len));
  if (cr == nullptr || static_cast<size_t>(cr - r.bytes) + 2 > r.len || cr[1] != '\n')
    return false;
  *first = static_cast<uint32_t>(cr - r.bytes) + 2;
  return resp::parseInteger({r.bytes + 1, static_cast<size_t>(cr - r.bytes) - 1}, count);
}

constexpr std::string_view kBadReply = "-ERR lb: a backend answered a split command unexpectedly\r\n";

}  // namespace

const CacheWire& redisWire() noexcept { return kWire; }

namespace redis {

void mergeReplies(const MergeInput& cmd, CacheScratch& sc, ByteChain& out) noexcept {
  // Any fragment that failed at its backend (an error reply) is the whole command's answer,
  // the first one in fragment order, as a client of one server would have seen it.
  for (uint16_t f = 0; f < cmd.fragment_count; ++f) {
    const FragmentReply& r = cmd.parts[f];
    if (r.bytes == nullptr) {
      out.append("-ERR lb: out of memory\r\n");
      return;
    }
    if (r.len > 0 && r.bytes[0] == '-') {
      out.append(r.bytes, r.len);
      return;
    }
  }
  // Each fragment's key count, from the plan (key -> fragment): what its reply must match.
  std::vector<uint32_t>& keys_of = sc.fragment_hosts;
  try {
    keys_of.assign(cmd.fragment_count, 0);
  } catch (...) {
    out.append("-ERR lb: out of memory\r\n");
    return;
  }
  for (uint32_t k = 0; k < cmd.keys; ++k) {
    if (cmd.plan == nullptr || cmd.plan[k] >= cmd.fragment_count) {
      out.append(kBadReply);
      return;
    }
    ++keys_of[cmd.plan[k]];
  }
  switch (cmd.kind) {
    case MergeKind::kSum: {
      // DEL, UNLINK, EXISTS and TOUCH count keys: 0 to the fragment's key count each, so the
      // sum cannot overflow either.
      int64_t total = 0;
      for (uint16_t f = 0; f < cmd.fragment_count; ++f) {
        int64_t v = 0;
        if (!integerReply(cmd.parts[f], &v) || v < 0 || v > static_cast<int64_t>(keys_of[f])) {
          out.append(kBadReply);
          return;
        }
        total += v;
      }
      out.append(":", 1);
      out.appendDecimal(total);
      out.append("\r\n", 2);
      return;
    }
    case MergeKind::kAllOk:
      for (uint16_t f = 0; f < cmd.fragment_count; ++f) {
        const FragmentReply& r = cmd.parts[f];
        if (r.len != 5 || memcmp(r.bytes, "+OK\r\n", 5) != 0) {
          out.append(kBadReply);
          return;
        }
      }
      out.append("+OK\r\n");
      return;
    case MergeKind::kMget: {
      // Each fragment's reply is an array of its keys' values, in their order; the client's
      // is every key's value in its own order: a k-way merge by the plan (key -> fragment).
      std::vector<uint32_t>& at = sc.cursor;
      std::vector<uint32_t>& starts = sc.order;
      std::vector<uint32_t>& lens = sc.hosts;
      try {
        at.assign(cmd.fragment_count, 0);
        starts.resize(cmd.keys);
        lens.resize(cmd.keys);
      } catch (...) {
        out.append("-ERR lb: out of memory\r\n");
        return;
      }
      for (uint16_t f = 0; f < cmd.fragment_count; ++f) {
        int64_t count = 0;
        if (!arrayHeader(cmd.parts[f], &count, &at[f]) ||
            count != static_cast<int64_t>(keys_of[f])) {
          out.append(kBadReply);
          return;
        }
      }
      const uint16_t* plan = cmd.plan;
      // Validate every element first, so a bad reply never leaves half an array behind: a
      // bulk string or a nil, as MGET answers each key.
      for (uint32_t k = 0; k < cmd.keys; ++k) {
        const FragmentReply& r = cmd.parts[plan[k]];
        uint32_t& pos = at[plan[k]];
        ReplyScan scan;
        const int64_t len = pos < r.len && r.bytes[pos] == '$'
                                ? resp::scanValue(r.bytes + pos, r.len - pos, scan)
                                : 0;
        if (len <= 0) {
          out.append(kBadReply);
          return;
        }
        starts[k] = pos;
        lens[k] = static_cast<uint32_t>(len);
        pos += static_cast<uint32_t>(len);
      }
      for (uint16_t f = 0; f < cmd.fragment_count; ++f) {
        if (at[f] != cmd.parts[f].len) {   // bytes after its last value
          out.append(kBadReply);
          return;
        }
      }
      resp::appendArrayHeader(out, cmd.keys);
      uint32_t next = 0;   // the next override
      for (uint32_t k = 0; k < cmd.keys; ++k) {
        while (next < cmd.override_count && cmd.overrides[next].position < k) ++next;
        if (next < cmd.override_count && cmd.overrides[next].position == k &&
            cmd.overrides[next].reply != nullptr) {
          out.append(cmd.overrides[next].reply, cmd.overrides[next].reply_len);
          continue;
        }
        out.append(cmd.parts[plan[k]].bytes + starts[k], lens[k]);
      }
      return;
    }
    default:
      out.append(kBadReply);
  }
}

bool ArrayCursor::open(const char* p, size_t n) noexcept {
  int64_t count = 0;
  uint32_t first = 0;
  if (!arrayHeader(FragmentReply{p, static_cast<uint32_t>(n)}, &count, &first) || count < 0)
    return false;
  p_ = p;
  n_ = n;
  pos_ = first;
  count_ = static_cast<uint64_t>(count);
  at_ = 0;
  return true;
}

bool ArrayCursor::seek(uint32_t index, std::string_view* element) noexcept {
  if (p_ == nullptr || index < at_ || index >= count_) return false;
  for (;;) {
    ReplyScan scan;
    const int64_t len = pos_ < n_ ? resp::scanValue(p_ + pos_, n_ - pos_, scan) : 0;
    if (len <= 0) return false;
    if (at_ == index) {
      *element = {p_ + pos_, static_cast<size_t>(len)};
      return true;
    }
    pos_ += static_cast<size_t>(len);
    ++at_;
  }
}

bool mgetElementFills(std::string_view e) noexcept {
  return e.size() >= 5 && e[0] == '$' && e[1] != '-';
}

uint32_t missedKeys(const MergeInput& cmd, CacheScratch& sc, uint32_t* positions,
                    uint32_t cap) noexcept {
  if (cmd.kind != MergeKind::kMget || cmd.plan == nullptr) return 0;
  std::vector<uint32_t>& at = sc.cursor;
  try {
    at.assign(cmd.fragment_count, 0);
  } catch (...) {
    return 0;
  }
  for (uint16_t f = 0; f < cmd.fragment_count; ++f) {
    int64_t count = 0;
    if (cmd.parts[f].bytes == nullptr || !arrayHeader(cmd.parts[f], &count, &at[f])) return 0;
  }
  uint32_t missed = 0;
  for (uint32_t k = 0; k < cmd.keys; ++k) {
    if (cmd.plan[k] >= cmd.fragment_count) return 0;
    const FragmentReply& r = cmd.parts[cmd.plan[k]];
    uint32_t& pos = at[cmd.plan[k]];
    ReplyScan scan;
    const int64_t len = pos < r.len && r.bytes[pos] == '$'
                            ? resp::scanValue(r.bytes + pos, r.len - pos, scan)
                            : 0;
    if (len <= 0) return 0;
    if (len == 5 && memcmp(r.bytes + pos, "$-1\r\n", 5) == 0 && missed < cap)
      positions[missed++] = k;
    pos += static_cast<uint32_t>(len);
  }
  return missed;
}

}  // namespace redis
}  // namespace lb
