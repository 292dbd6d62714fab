#include "lb/membership/etcd_client.h"

#include <algorithm>
#include <utility>

#include "lb/core/address.h"
#include "lb/membership/etcd_exchange.h"
#include "lb/membership/etcd_json.h"

namespace lb {

const char* etcdFailureName(EtcdFailure f) noexcept {
  switch (f) {
    case EtcdFailure::kConnect: return "connect";
    case EtcdFailure::kTimeout: return "timeout";
    case EtcdFailure::kHttpStatus: return "http_status";
    case EtcdFailure::kProtocol: return "protocol";
    case EtcdFailure::kCompacted: return "compacted";
    case EtcdFailure::kCanceled: return "canceled";
    case EtcdFailure::kClosed: return "closed";
  }
  return "?";
}

bool parseEtcdUrl(std::string_view url, EtcdEndpoint* out, std::string* error) {
  const std::string quoted = "'" + std::string(url) + "'";
  const bool tls = url.substr(0, 8) == "https://";
  if (!tls && url.substr(0, 7) != "http://") {
    *error = quoted + " is not an etcd client URL (write e.g. http://127.0.0.1:2379)";
    return false;
  }
  std::string_view rest = url.substr(tls ? 8 : 7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    *error = quoted + ": an etcd URL is scheme, host and port only (no path, query or user)";
    return false;
  }
  std::string hostport(rest);
  // No port: etcd's client port. "[v6]" and "a.b.c.d" have no ':' after the host.
  const size_t bracket = hostport.rfind(']');
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket))
    hostport += ":2379";
  HostPort hp;
  std::string why;
  if (!parseHostPort(hostport, &hp, &why)) {
    *error = quoted + ": " + why;
    return false;
  }
  if (!hp.numeric) {
    *error = quoted + ": the host must be an IP address (lb does not resolve etcd's names)";
    return false;
  }
  EtcdEndpoint ep;
  ep.host = hp.host;
  ep.port = hp.port;
  ep.url = (tls ? "https://" : "http://") + std::string(rest);
  ep.tls = tls;
  ep.address = hp.address;
  ep.address_len = hp.address_len;
  *out = std::move(ep);
  return true;
}

// --- EtcdClient ----------------------------------------------------------------------------

struct EtcdCall {
  std::string path;
  std::string body;
  // Retried on another member after a timeout or a 5xx too; a write (put, txn) only when the
  // connection was never made, since it may have been applied.
  bool idempotent = false;
  bool auth = false;      // the authenticate request itself: sent without a token
  bool reauthed = false;  // sent again once after "invalid auth token"; never twice
  size_t first = 0;       // the endpoint of the first attempt
  size_t tries = 0;
  EtcdExchange* exchange = nullptr;
  // The body of a 200, or the error; the typed wrappers read the body.
  std::function<void(const std::string* body, const EtcdError* error)> done;
};

struct EtcdClient::Watch {
  std::string key;
  std::string body;   // the create request, kept while the watch waits for a token
  bool created = false;
  std::function<void()> on_created;
  std::function<void(const EtcdWatchBatch&)> on_batch;
  std::function<void(const EtcdError&)> on_end;
};

EtcdClient::EtcdClient(uv_loop_t* loop, std::vector<EtcdEndpoint> endpoints,
                       Duration request_timeout, EtcdCredentials credentials)
    : loop_(loop),
      endpoints_(std::move(endpoints)),
      timeout_(request_timeout),
      credentials_(std::move(credentials)) {
  uv_timer_init(loop_, &close_timer_);
  close_timer_.data = this;
}

EtcdClient::~EtcdClient() = default;

void EtcdClient::useNextEndpoint() noexcept {
  if (!endpoints_.empty()) current_ = (current_ + 1) % endpoints_.size();
}

EtcdExchange* EtcdClient::open(size_t endpoint, std::string request, bool stream) noexcept {
  // The slot first: once constructed, an exchange's handles are in the loop and only its
  // close callbacks may free it, so nothing may fail after the construction.
  try {
    exchanges_.push_back(nullptr);
  } catch (...) {
    return nullptr;
  }
  EtcdExchange* x = nullptr;
  try {
    x = new EtcdExchange(this, loop_, endpoint, std::move(request), stream,
                         static_cast<uint64_t>(std::max<int64_t>(timeout_.count(), 1)),
                         endpoints_[endpoint].tls, credentials_.tls);
  } catch (...) {
    exchanges_.pop_back();
    return nullptr;
  }
  exchanges_.back() = x;
  x->start(reinterpret_cast<const sockaddr*>(&endpoints_[endpoint].address));
  return x;
}

std::string EtcdClient::httpRequest(size_t endpoint, const std::string& path,
                                    const std::string& body, bool keep, bool token) const {
  const EtcdEndpoint& ep = endpoints_[endpoint];
  const bool v6 = ep.address.ss_family == AF_INET6;
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: " + (v6 ? "[" + ep.host + "]" : ep.host) +
                  ":" + std::to_string(ep.port) +
                  "\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n";
  // One request, one connection: nothing to pool on the main loop, and a member that went
  // away never leaves a half-closed connection behind.
  if (!keep) r += "Connection: close\r\n";
  if (token && !token_.empty()) r += "Authorization: " + token_ + "\r\n";
  r += "\r\n";
  r += body;
  return r;
}

void EtcdClient::start(std::unique_ptr<Call> call) noexcept {
  if (closing_ || endpoints_.empty()) return;
  try {
    if (!call->auth && needsToken()) {
      waiting_.push_back(std::move(call));
      authenticate();
      return;
    }
    call->first = current_;
    call->tries = 0;
    Call* c = call.get();
    calls_.push_back(std::move(call));
    attempt(c);
  } catch (...) {
    // Out of memory: the call is dropped, as one whose request could not be built.
  }
}

void EtcdClient::authenticate() noexcept {
  if (authenticating_ || closing_) return;
  try {
    auto call = std::make_unique<Call>();
    call->path = "/v3/auth/authenticate";
    call->body = etcd_json::authenticateRequest(credentials_.user, credentials_.password);
    call->idempotent = true;
    call->auth = true;
    call->done = [this](const std::string* body, const EtcdError* error) {
      authenticated(body, error);
    };
    authenticating_ = true;
    start(std::move(call));
  } catch (...) {
    authenticating_ = false;
  }
}

void EtcdClient::authenticated(const std::string* body, const EtcdError* error) noexcept {
  authenticating_ = false;
  EtcdError e;
  if (error != nullptr) {
    e = *error;
  } else {
    std::string why;
    if (etcd_json::readAuthToken(*body, &token_, &why)) {
      std::vector<std::unique_ptr<Call>> go = std::move(waiting_);
      waiting_.clear();
      for (auto& c : go) start(std::move(c));
      if (watch_waiting_) openWatch();
      return;
    }
    e.kind = EtcdFailure::kProtocol;
    e.message = why;
    e.endpoint = currentEndpoint().url;
  }
  // etcd's reason ("authentication failed, invalid user ID or password") names no secret.
  try {
    e.message = "authentication as user '" + credentials_.user + "' failed: " + e.message;
  } catch (...) {
  }
  std::vector<std::unique_ptr<Call>> failed = std::move(waiting_);
  waiting_.clear();
  for (auto& c : failed) {
    if (closing_) return;
    c->done(nullptr, &e);
  }
  if (watch_waiting_ && !closing_) {
    watch_waiting_ = false;
    endWatch(e);
  }
}

void EtcdClient::attempt(Call* call) noexcept {
  const size_t ep = (call->first + call->tries) % endpoints_.size();
  ++call->tries;
  std::string request;
  try {
    request = httpRequest(ep, call->path, call->body, false, !call->auth);
  } catch (...) {
    return;   // out of memory: the call stays until close()
  }
  call->exchange = open(ep, std::move(request), false);
  if (call->exchange != nullptr) call->exchange->call = call;
}

void EtcdClient::finish(Call* call, const std::string* body, const EtcdError* error) noexcept {
  auto it = std::find_if(calls_.begin(), calls_.end(),
                         [call](const std::unique_ptr<Call>& c) { return c.get() == call; });
  if (it == calls_.end()) return;
  std::unique_ptr<Call> owned = std::move(*it);
  calls_.erase(it);
  owned->done(body, error);
}

void EtcdClient::exchangeReplied(EtcdExchange* x, int status, const std::string& body) noexcept {
  if (closing_) return;
  EtcdError e;
  e.kind = EtcdFailure::kHttpStatus;
  e.http_status = status;
  e.endpoint = endpoints_[x->endpoint()].url;
  try {
    e.message = "status " + std::to_string(status) + ": " + etcd_json::errorText(body);
  } catch (...) {
  }
  // A watch's 200 is a stream and never ends here: this is etcd refusing it.
  if (x == watch_) {
    endWatch(e);
    return;
  }
  Call* call = x->call;
  x->call = nullptr;
  if (call == nullptr) return;
  call->exchange = nullptr;
  if (status != 200 && !call->auth && !credentials_.user.empty() && !call->reauthed &&
      etcd_json::tokenRejected(status, e.message)) {
    // The token expired or the member forgot it: a new one, and the request once more.
    auto it = std::find_if(calls_.begin(), calls_.end(),
                           [call](const std::unique_ptr<Call>& c) { return c.get() == call; });
    if (it != calls_.end()) {
      std::unique_ptr<Call> owned = std::move(*it);
      calls_.erase(it);
      owned->reauthed = true;
      token_.clear();
      start(std::move(owned));
      return;
    }
  }
  if (status == 200) {
    current_ = x->endpoint();
    finish(call, &body, nullptr);
    return;
  }
  // A member that cannot serve (no leader, shutting down) answers 5xx: another may.
  if (status >= 500 && call->idempotent && call->tries < endpoints_.size()) {
    attempt(call);
    return;
  }
  finish(call, nullptr, &e);
}

void EtcdClient::exchangeFailed(EtcdExchange* x, EtcdError error) noexcept {
  if (closing_) return;
  try {
    error.endpoint = endpoints_[x->endpoint()].url;
  } catch (...) {
  }
  if (x == watch_) {
    endWatch(error);
    return;
  }
  Call* call = x->call;
  x->call = nullptr;
  if (call == nullptr) return;
  call->exchange = nullptr;
  const bool retry = call->tries < endpoints_.size() &&
                     (call->idempotent ? error.kind == EtcdFailure::kConnect ||
                                             error.kind == EtcdFailure::kTimeout
                                       : !x->connected());
  if (retry) {
    attempt(call);
    return;
  }
  finish(call, nullptr, &error);
}

void EtcdClient::exchangeClosed(EtcdExchange* x) noexcept {
  auto it = std::find(exchanges_.begin(), exchanges_.end(), x);
  if (it != exchanges_.end()) exchanges_.erase(it);
  if (x == watch_) watch_ = nullptr;
  maybeClosed();
}

// --- Typed requests ----------------------------------------------------------------------

namespace {

EtcdError protocolError(const std::string& why) {
  EtcdError e;
  e.kind = EtcdFailure::kProtocol;
  e.message = "unexpected reply from etcd: " + why;
  return e;
}

}  // namespace

void EtcdClient::range(std::string key,
                       std::function<void(const EtcdRangeReply*, const EtcdError*)> done) {
  auto call = std::make_unique<Call>();
  call->path = "/v3/kv/range";
  call->body = etcd_json::rangeRequest(key);
  call->idempotent = true;
  call->done = [this, key = std::move(key), done = std::move(done)](const std::string* body,
                                                                    const EtcdError* error) {
    if (error != nullptr) return done(nullptr, error);
    EtcdRangeReply reply;
    std::string why;
    if (etcd_json::readRange(*body, key, &reply, &why)) return done(&reply, nullptr);
    EtcdError e = protocolError(why);
    e.endpoint = currentEndpoint().url;
    done(nullptr, &e);
  };
  start(std::move(call));
}

void EtcdClient::putIfModRevision(std::string key, std::string value, int64_t expected,
                                  std::function<void(const EtcdTxnReply*, const EtcdError*)> done) {
  auto call = std::make_unique<Call>();
  call->path = "/v3/kv/txn";
  call->body = etcd_json::txnPutIfModRevision(key, value, expected);
  call->done = [this, key = std::move(key), done = std::move(done)](const std::string* body,
                                                                    const EtcdError* error) {
    if (error != nullptr) return done(nullptr, error);
    EtcdTxnReply reply;
    std::string why;
    if (etcd_json::readTxn(*body, key, &reply, &why)) return done(&reply, nullptr);
    EtcdError e = protocolError(why);
    e.endpoint = currentEndpoint().url;
    done(nullptr, &e);
  };
  start(std::move(call));
}

void EtcdClient::put(std::string key, std::string value,
                     std::function<void(int64_t revision, const EtcdError*)> done) {
  auto call = std::make_unique<Call>();
  call->path = "/v3/kv/put";
  call->body = etcd_json::putRequest(key, value);
  call->done = [this, done = std::move(done)](const std::string* body, const EtcdError* error) {
    if (error != nullptr) return done(0, error);
    int64_t revision = 0;
    std::string why;
    if (etcd_json::readHeaderRevision(*body, &revision, &why)) return done(revision, nullptr);
    EtcdError e = protocolError(why);
    e.endpoint = currentEndpoint().url;
    done(0, &e);
  };
  start(std::move(call));
}

void EtcdClient::compact(int64_t revision, std::function<void(const EtcdError*)> done) {
  auto call = std::make_unique<Call>();
  call->path = "/v3/kv/compaction";
  call->body = etcd_json::compactRequest(revision);
  call->idempotent = true;
  call->done = [this, done = std::move(done)](const std::string* body, const EtcdError* error) {
    if (error != nullptr) return done(error);
    int64_t ignored = 0;
    std::string why;
    if (etcd_json::readHeaderRevision(*body, &ignored, &why)) return done(nullptr);
    EtcdError e = protocolError(why);
    e.endpoint = currentEndpoint().url;
    done(&e);
  };
  start(std::move(call));
}

// --- Watch -------------------------------------------------------------------------------

void EtcdClient::watch(std::string key, int64_t start_revision, std::function<void()> on_created,
                       std::function<void(const EtcdWatchBatch&)> on_batch,
                       std::function<void(const EtcdError&)> on_end) {
  if (closing_ || endpoints_.empty()) return;
  cancelWatch();
  auto w = std::make_unique<Watch>();
  w->body = etcd_json::watchCreateRequest(key, start_revision);
  w->key = std::move(key);
  w->on_created = std::move(on_created);
  w->on_batch = std::move(on_batch);
  w->on_end = std::move(on_end);
  watch_state_ = std::shared_ptr<Watch>(std::move(w));
  if (needsToken()) {
    watch_waiting_ = true;
    authenticate();
    return;
  }
  openWatch();
}

void EtcdClient::openWatch() noexcept {
  watch_waiting_ = false;
  if (watch_state_ == nullptr || closing_) return;
  try {
    watch_ = open(current_, httpRequest(current_, "/v3/watch", watch_state_->body, true, true),
                  true);
  } catch (...) {
    watch_ = nullptr;
  }
}

void EtcdClient::cancelWatch() {
  watch_waiting_ = false;
  watch_state_.reset();
  if (watch_ != nullptr) {
    EtcdExchange* x = watch_;
    watch_ = nullptr;
    x->abandon();
  }
}

void EtcdClient::endWatch(const EtcdError& error) noexcept {
  // A watch refused for its token: the next request (the owner's Range) authenticates again.
  if (!credentials_.user.empty() && etcd_json::tokenRejected(error.http_status, error.message))
    token_.clear();
  watch_waiting_ = false;
  std::shared_ptr<Watch> w = std::move(watch_state_);
  if (watch_ != nullptr) {
    EtcdExchange* x = watch_;
    watch_ = nullptr;
    x->abandon();
  }
  if (w != nullptr && w->on_end) w->on_end(error);
}

void EtcdClient::watchLine(EtcdExchange* x, std::string_view line) noexcept {
  if (x != watch_ || watch_state_ == nullptr || closing_) return;
  // Held for the message: a callback may cancel the watch (or close the client), which
  // drops the callbacks, its own among them, while it runs.
  std::shared_ptr<Watch> hold = watch_state_;
  Watch* w = hold.get();
  etcd_json::WatchMessage m;
  std::string why;
  EtcdError e;
  e.endpoint = endpoints_[x->endpoint()].url;
  if (!etcd_json::readWatchMessage(line, w->key, &m, &why)) {
    e = protocolError(why);
    e.endpoint = endpoints_[x->endpoint()].url;
    endWatch(e);
    return;
  }
  if (m.stream_error) {
    e.kind = EtcdFailure::kCanceled;
    e.message = "etcd ended the watch: " + m.error_text;
    endWatch(e);
    return;
  }
  if (m.created && !w->created) {
    w->created = true;
    x->stopDeadline();
    if (w->on_created) w->on_created();
    if (x != watch_ || watch_state_.get() != w) return;   // canceled from inside
  }
  if (!m.events.empty()) {
    if (!w->created) {
      endWatch(protocolError("watch events before the watch was created"));
      return;
    }
    EtcdWatchBatch batch;
    batch.revision = m.revision;
    batch.events = std::move(m.events);
    if (w->on_batch) w->on_batch(batch);
    if (x != watch_ || watch_state_.get() != w) return;
  }
  if (m.compact_revision > 0) {
    e.kind = EtcdFailure::kCompacted;
    e.compact_revision = m.compact_revision;
    e.message = "revision compacted: etcd keeps revisions from " +
                std::to_string(m.compact_revision);
    endWatch(e);
    return;
  }
  if (m.canceled) {
    e.kind = EtcdFailure::kCanceled;
    e.message = "etcd canceled the watch" + (m.cancel_reason.empty() ? std::string()
                                                                     : ": " + m.cancel_reason);
    endWatch(e);
  }
}

// --- Closing -----------------------------------------------------------------------------

void EtcdClient::close(std::function<void()> closed) {
  if (closing_) return;
  closing_ = true;
  closed_ = std::move(closed);
  calls_.clear();
  waiting_.clear();
  watch_waiting_ = false;
  watch_state_.reset();
  watch_ = nullptr;
  // abandon() never frees an exchange at once (its handles close first), so the list holds.
  for (EtcdExchange* x : exchanges_) {
    x->call = nullptr;
    x->abandon();
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&close_timer_), onTimerClosed);
}

void EtcdClient::onTimerClosed(uv_handle_t* h) {
  auto* self = static_cast<EtcdClient*>(h->data);
  self->timer_open_ = false;
  self->maybeClosed();
}

void EtcdClient::maybeClosed() noexcept {
  if (!closing_ || timer_open_ || !exchanges_.empty() || !closed_) return;
  std::function<void()> closed = std::move(closed_);
  closed_ = nullptr;
  closed();   // may delete this
}

}  // namespace lb
