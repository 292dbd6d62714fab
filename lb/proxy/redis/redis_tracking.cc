#include "lb/proxy/redis/redis_tracking.h"

#include <cstring>

#include "lb/core/log.h"
#include "lb/proxy/cache/near_cache.h"
#include "lb/proxy/redis/resp.h"
#include "lb/runtime/worker_env.h"

namespace lb {

namespace {

constexpr uint64_t kConnectTimeoutMs = 1000;
constexpr uint64_t kMaxBackoffMs = 1000;
constexpr std::string_view kChannel = "__redis__:invalidate";

std::string bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

// A RESP2 reader over one complete value: the header line of the next element, and bulk
// strings. Each returns false when the bytes are not what it reads.
struct RespCursor {
  const char* p;
  const char* end;

  bool line(char type, int64_t* num) {
    if (p >= end || *p != type) return false;
    const char* eol = static_cast<const char*>(memchr(p, '\r', static_cast<size_t>(end - p)));
    if (eol == nullptr || eol + 1 >= end) return false;
    const bool ok = resp::parseInteger({p + 1, static_cast<size_t>(eol - p - 1)}, num);
    p = eol + 2;
    return ok;
  }
  bool bulkString(std::string_view* out) {
    int64_t len = 0;
    if (!line('$', &len) || len < 0 || end - p < len + 2) return false;
    *out = {p, static_cast<size_t>(len)};
    p += len + 2;
    return true;
  }
};

}  // namespace

RedisTracker::RedisTracker(WorkerEnv& env, const ServerGroup& group, uint8_t ok_reply_kind)
    : env_(env),
      target_(group.target),
      password_(group.password),
      source_(group.id),
      ok_reply_kind_(ok_reply_kind) {
  uv_timer_init(env_.loop(), &timer_);
  timer_.data = this;
  if (!password_.empty()) hello_ = "*2\r\n$4\r\nAUTH\r\n" + bulk(password_);
  hello_ += "*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n";
  hello_ += "*2\r\n$6\r\nCLIENT\r\n$12\r\nTRACKINGINFO\r\n";
  hello_ += "*2\r\n$9\r\nSUBSCRIBE\r\n" + bulk(kChannel);
  connect();
}

RedisTracker::~RedisTracker() = default;

void RedisTracker::attach(const std::shared_ptr<NearCache>& cache) noexcept { cache_ = cache; }

void RedisTracker::connect() noexcept {
  state_ = State::kConnecting;
  step_ = 0;
  in_.clear();
  int err = 0;
  conn_ = env_.upstreams().connect(target_, *this, kConnectTimeoutMs, false, &err);
  if (conn_ == nullptr) down("cannot start a connection");
}

void RedisTracker::onConnected(Connection&, int status) noexcept {
  if (state_ != State::kConnecting) return;
  if (status < 0) {
    down("connect failed");
    return;
  }
  if (conn_->startRead() < 0 || conn_->write(hello_.data(), hello_.size()) < 0)
    down("write failed");
}

void RedisTracker::onWritten(Connection&, ConnectionWrite*, int status) noexcept {
  if (status < 0 && (state_ == State::kConnecting || state_ == State::kUp)) down("write failed");
}

void RedisTracker::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  buf->base = read_buf_;
  buf->len = sizeof read_buf_;
}

void RedisTracker::onEof(Connection&) noexcept {
  if (state_ == State::kConnecting || state_ == State::kUp) down("the server closed it");
}

void RedisTracker::onError(Connection&, int) noexcept {
  if (state_ == State::kConnecting || state_ == State::kUp) down("read failed");
}

void RedisTracker::onRead(Connection&, char* p, size_t n) noexcept {
  if (state_ == State::kClosed || state_ == State::kDown) return;
  try {
    in_.append(p, n);
  } catch (...) {
    down("out of memory");
    return;
  }
  size_t at = 0;
  while (at < in_.size() && (state_ == State::kConnecting || state_ == State::kUp)) {
    ReplyScan scan;
    const int64_t len = resp::scanValue(in_.data() + at, in_.size() - at, scan);
    if (len == 0) break;
    if (len < 0) {
      down("a malformed message");
      return;
    }
    onValue(in_.data() + at, static_cast<size_t>(len));
    at += static_cast<size_t>(len);
  }
  if (state_ == State::kConnecting || state_ == State::kUp) in_.erase(0, at);
}

// The hello's replies in order (AUTH's when there is a password, CLIENT ID, CLIENT
// TRACKINGINFO, SUBSCRIBE), then invalidation messages.
void RedisTracker::onValue(const char* p, size_t n) noexcept {
  if (state_ == State::kUp) {
    onMessage(p, n);
    return;
  }
  const int first = password_.empty() ? 1 : 0;
  const int step = step_++ + first;
  if (n > 0 && p[0] == '-') {
    if (step == 2 && !warned_) {
      warned_ = true;
      LB_WARN("near cache: a backend does not support CLIENT TRACKING (Redis 6.2 or later "
              "is needed); its hot keys are not cached, and lb keeps asking once a second");
    }
    down(step == 0 ? "AUTH was refused" : "the server refused the tracking hello");
    return;
  }
  if (step == 1) {
    RespCursor c{p, p + n};
    if (!c.line(':', &id_)) {
      down("CLIENT ID did not answer an integer");
      return;
    }
  }
  if (step == 3) {   // subscribed: tracking works from here
    enable_ = "*5\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n$8\r\nREDIRECT\r\n" +
              bulk(std::to_string(id_));
    ++epoch_;
    if (epoch_ == 0) ++epoch_;   // 0 is a server connection's "never enabled"
    state_ = State::kUp;
    backoff_ms_ = 100;
  }
}

// *3 $7 message $20 __redis__:invalidate, then the keys' array, or a null (FLUSHALL).
void RedisTracker::onMessage(const char* p, size_t n) noexcept {
  RespCursor c{p, p + n};
  int64_t count = 0;
  std::string_view kind, channel;
  if (!c.line('*', &count) || count != 3 || !c.bulkString(&kind) || kind != "message" ||
      !c.bulkString(&channel) || channel != kChannel)
    return;   // not an invalidation (a subscribe confirmation, say)
  std::shared_ptr<NearCache> cache = cache_.lock();
  if (!cache) return;
  int64_t keys = -1;
  if (c.p < c.end && *c.p == '*' && c.line('*', &keys) && keys >= 0) {
    for (int64_t i = 0; i < keys; ++i) {
      std::string_view key;
      if (!c.bulkString(&key)) break;
      const uint64_t h = NearCache::hashOf(key);
      cache->shared().bump(h);   // a read in flight must not fill the old value
      cache->invalidate(h, key, NearInvalidation::kTracking);
    }
    return;
  }
  cache->flushSource(source_);   // a null: the whole database went
}

void RedisTracker::flush() noexcept {
  if (std::shared_ptr<NearCache> cache = cache_.lock()) cache->flushSource(source_);
}

// Lost, or never got up: the backend's entries go (the server can no longer tell lb about
// changes), nothing fills until the next epoch, and a retry comes after the backoff.
void RedisTracker::down(const char* why) noexcept {
  if (state_ == State::kClosed) return;
  if (state_ == State::kUp) LB_INFO("near cache: a tracking connection was lost (%s); its "
                                    "backend's entries are flushed", why);
  else LB_DEBUG("near cache: tracking connection: %s", why);
  flush();
  state_ = State::kDown;
  if (conn_ != nullptr) {
    conn_->close();
    conn_ = nullptr;
  }
  uv_timer_start(&timer_, onTimerFired, backoff_ms_, 0);
  backoff_ms_ = backoff_ms_ * 2 > kMaxBackoffMs ? kMaxBackoffMs : backoff_ms_ * 2;
}

void RedisTracker::onTimerFired(uv_timer_t* t) {
  auto* self = static_cast<RedisTracker*>(t->data);
  if (self->state_ == State::kDown) self->connect();
}

void RedisTracker::close() noexcept {
  if (state_ == State::kClosed) return;
  flush();
  state_ = State::kClosed;
  if (conn_ != nullptr) {
    conn_->close();
    conn_ = nullptr;
  }
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onTimerClosed);
}

void RedisTracker::onTimerClosed(uv_handle_t* h) { delete static_cast<RedisTracker*>(h->data); }

}  // namespace lb
