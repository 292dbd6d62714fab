// One HTTP/1.1 exchange of lb::EtcdClient with one etcd member (the client's own piece; nothing
// else uses it): connect within the request timeout, write the request, read
// the response with lb's strict parser (lb/http/parser.h). A request collects the whole body
// and hands it to the client at the end of the message; the watch hands over each
// newline-ended message of a 200 body as soon as it is whole, however etcd chunked it.
//
// An https:// member gets lb's TLS transport (lb/tls/tls_transport.h) under the same
// Connection, as a health check of a TLS cluster does: the handshake runs inside the connect
// timeout, and its failure is a kConnect whose message says why ("TLS handshake: certificate
// verify failed: ...").
//
// Owns its Connection (lb/net/connection.h) and frees itself in its last close callback,
// after telling its owner (exchangeClosed). After abandon() it reports nothing more. Every
// outcome reaches the owner from a libuv callback, never from start().
#pragma once

#include <uv.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lb/core/duration.h"
#include "lb/core/sys_error.h"
#include "lb/http/parser.h"
#include "lb/membership/etcd_types.h"
#include "lb/net/connection.h"
#include "lb/tls/tls_transport.h"

namespace lb {

class EtcdExchange;
struct EtcdCall;   // the client's: one request across its attempts

// What an exchange reports: a whole response (any status), a failure, one watch message,
// and (always, last) that its handles are closed and it is about to free itself.
class EtcdExchangeOwner {
 public:
  virtual void exchangeReplied(EtcdExchange* x, int status, const std::string& body) noexcept = 0;
  virtual void exchangeFailed(EtcdExchange* x, EtcdError error) noexcept = 0;
  virtual void watchLine(EtcdExchange* x, std::string_view line) noexcept = 0;
  virtual void exchangeClosed(EtcdExchange* x) noexcept = 0;

 protected:
  ~EtcdExchangeOwner() = default;
};

class EtcdExchange final : public ConnectionOwner, public HttpBodySink {
 public:
  // Bytes of one reply body (or one watch message) accepted; more is kProtocol. etcd's own
  // request limit is 1.5 MiB (--max-request-bytes), 2 MiB once base64.
  static constexpr size_t kMaxBodyBytes = 8 * 1024 * 1024;
  // etcd's heads are a few hundred bytes.
  static constexpr size_t kMaxHeadBytes = 64 * 1024;

  // `tls`: the member is https://, spoken to with `context` (which it needs).
  EtcdExchange(EtcdExchangeOwner* client, uv_loop_t* loop, size_t endpoint, std::string request,
               bool stream, uint64_t timeout_ms, bool tls,
               std::shared_ptr<const TlsClientContext> context)
      : tls_context_(tls ? std::move(context) : nullptr),
        tls_required_(tls),
        client_(client),
        loop_(loop),
        endpoint_(endpoint),
        stream_(stream),
        timeout_ms_(timeout_ms),
        request_(std::move(request)),
        conn_(*this, loop) {}

  void start(const sockaddr* address) noexcept {
    // The loop's clock is as old as its last turn: a caller that spent time since (a
    // blocking test, a slow callback) would otherwise get a deadline that much too early.
    uv_update_time(loop_);
    start_ms_ = uv_now(loop_);
    int rc = 0;
    if (tls_required_ && tls_context_ == nullptr) {
      early_ = errorOf(EtcdFailure::kConnect, "an https:// member but no TLS settings");
      done_ = true;
      conn_.close();
      return;
    }
    if (tls_context_ != nullptr) {
      // The stats are this exchange's own and outlive the transport (released at close).
      std::shared_ptr<TlsWorkerStats> stats(std::shared_ptr<void>(), &tls_stats_);
      tls_ = TlsTransport::connect(tls_context_, std::move(stats), tls_context_->mainSlot(),
                                   address);
      if (tls_ == nullptr) rc = UV_ENOMEM;
    }
    if (rc == 0) rc = conn_.connect(address, timeout_ms_, tls_);
    if (rc != 0) {
      // Reported from the close callback: never inline from the caller's request.
      early_ = errorOf(EtcdFailure::kConnect, std::string("connect: ") + sysErrorText(rc));
      done_ = true;
      conn_.close();
    }
  }

  // No more outcome for the client: it gave this exchange up (a new watch, cancelWatch,
  // close). The handles close; exchangeClosed still follows.
  void abandon() noexcept {
    done_ = true;
    early_.reset();
    conn_.close();
  }

  // The watch is created: from now on nothing bounds it.
  void stopDeadline() noexcept { conn_.stopTimer(); }

  size_t endpoint() const noexcept { return endpoint_; }
  bool connected() const noexcept { return connected_; }
  EtcdCall* call = nullptr;   // the request it serves (none for the watch)

 private:
  void onConnected(Connection&, int status) noexcept override {
    if (done_) return;
    if (status != 0) {
      if (tls_ != nullptr && !tls_->failureText().empty())
        fail(EtcdFailure::kConnect, "TLS handshake: " + tls_->failureText());
      else if (status == UV_ETIMEDOUT)
        fail(EtcdFailure::kTimeout, "no connection within " + formatDuration(Duration(timeout_ms_)));
      else
        fail(EtcdFailure::kConnect, std::string("connect: ") + sysErrorText(status));
      return;
    }
    connected_ = true;
    conn_.setNoDelay();
    const uint64_t spent = uv_now(loop_) - start_ms_;
    conn_.startTimer(spent < timeout_ms_ ? timeout_ms_ - spent : 1);
    uv_buf_t b = uv_buf_init(request_.data(), static_cast<unsigned>(request_.size()));
    const ssize_t rc = conn_.write(&write_, &b, 1);
    if (rc < 0) {
      fail(EtcdFailure::kConnect, std::string("send: ") + sysErrorText(static_cast<int>(rc)));
      return;
    }
    const int r = conn_.readStart();
    if (r != 0) fail(EtcdFailure::kConnect, std::string("read: ") + sysErrorText(r));
  }

  void onAlloc(Connection&, uv_buf_t* buf) noexcept override {
    *buf = uv_buf_init(read_, sizeof read_);
  }

  void onRead(Connection&, char* p, size_t n) noexcept override {
    if (n == 0 || done_) return;
    if (parser_.headDone()) {
      feed(p, p, n);
      return;
    }
    // The parser's checks of the head (reason phrase, Transfer-Encoding) read its spans as
    // offsets from one base: the head stays whole in head_ until it is complete, however the
    // reads split it. The body after it needs no such care.
    if (head_.size() + n > kMaxHeadBytes) {
      fail(EtcdFailure::kProtocol, "a response head over 64 KiB");
      return;
    }
    const size_t from = head_.size();
    try {
      head_.append(p, n);
    } catch (...) {
      fail(EtcdFailure::kProtocol, "out of memory for the response head");
      return;
    }
    feed(head_.data(), head_.data() + from, n);
  }

  void onEof(Connection&) noexcept override {
    if (done_) return;
    if (parser_.started() && parser_.headDone() && parser_.needsEof() && parser_.finishAtEof() &&
        parser_.messageDone()) {
      messageComplete();
      return;
    }
    if (stream_ && status_ == 200)
      fail(EtcdFailure::kClosed, "etcd closed the watch stream");
    else
      fail(EtcdFailure::kConnect, "the connection closed before the whole reply" + tlsReason());
  }

  void onError(Connection&, int status) noexcept override {
    if (done_) return;
    const std::string why = std::string("read: ") + sysErrorText(status) + tlsReason();
    fail(stream_ && status_ == 200 ? EtcdFailure::kClosed : EtcdFailure::kConnect, why);
  }

  void onWritten(Connection&, ConnectionWrite*, int status) noexcept override {
    if (done_ || status == 0 || status == UV_ECANCELED) return;
    fail(EtcdFailure::kConnect, std::string("send: ") + sysErrorText(status));
  }

  void onTimer(Connection&) noexcept override {
    if (done_) return;
    const std::string limit = formatDuration(Duration(timeout_ms_));
    fail(EtcdFailure::kTimeout, stream_ ? "no watch created within " + limit
                                        : "no whole reply within " + limit);
  }

  void onClosed(Connection&) noexcept override {
    EtcdExchangeOwner* client = client_;
    if (early_) client->exchangeFailed(this, *early_);
    client->exchangeClosed(this);
    delete this;
  }

  void onBody(const char* data, size_t len) noexcept override {
    if (overflow_) return;
    if (body_.size() - line_start_ + len > kMaxBodyBytes) {
      overflow_ = true;
      return;
    }
    body_.append(data, len);
  }

  // [p, p + n) inside the buffer that starts at `base`.
  void feed(const char* base, const char* p, size_t n) noexcept {
    while (!done_) {
      size_t consumed = 0;
      const HttpParser::Result r = parser_.feed(base, p, n, &consumed);
      p += consumed;
      n -= consumed;
      if (overflow_) {
        fail(EtcdFailure::kProtocol, stream_ ? "a watch message over 8 MiB" : "a reply over 8 MiB");
        return;
      }
      switch (r) {
        case HttpParser::Result::kHeadComplete:
          status_ = parser_.head().status;
          if (status_ < 200) {
            fail(EtcdFailure::kProtocol, "an interim response (" + std::to_string(status_) + ")");
            return;
          }
          parser_.resumeAfterHead(false);
          continue;
        case HttpParser::Result::kMessageComplete:
          if (stream_ && status_ == 200) deliverLines();
          if (!done_) messageComplete();
          return;
        case HttpParser::Result::kNeedMore:
          if (stream_ && status_ == 200) deliverLines();
          return;
        case HttpParser::Result::kError:
          fail(EtcdFailure::kProtocol,
               std::string("malformed HTTP response: ") +
                   (parser_.errorReason() != nullptr ? parser_.errorReason() : "?"));
          return;
      }
    }
  }

  // Every whole message of the watch body so far, in order; the client may give this
  // exchange up from inside any of them.
  void deliverLines() noexcept {
    while (!done_) {
      const size_t nl = body_.find('\n', line_start_);
      if (nl == std::string::npos) break;
      std::string_view line(body_.data() + line_start_, nl - line_start_);
      line_start_ = nl + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      client_->watchLine(this, line);
    }
    if (line_start_ > 0 && !done_) {
      body_.erase(0, line_start_);
      line_start_ = 0;
    }
  }

  void messageComplete() noexcept {
    done_ = true;
    conn_.close();
    if (stream_ && status_ == 200) {
      client_->exchangeFailed(this, errorOf(EtcdFailure::kClosed, "etcd ended the watch response"));
      return;
    }
    client_->exchangeReplied(this, status_, body_);
  }

  // After the handshake, TLS's reason for a connection that ended (etcd refusing a client
  // without a certificate alerts then, under TLS 1.3); "" when there is none.
  std::string tlsReason() const {
    if (tls_ == nullptr || tls_->failureText().empty()) return "";
    return " (TLS: " + tls_->failureText() + ")";
  }

  static EtcdError errorOf(EtcdFailure kind, std::string message) {
    EtcdError e;
    e.kind = kind;
    e.message = std::move(message);
    return e;
  }

  void fail(EtcdFailure kind, std::string message) noexcept {
    if (done_) return;
    done_ = true;
    conn_.close();
    client_->exchangeFailed(this, errorOf(kind, std::move(message)));
  }

  std::shared_ptr<const TlsClientContext> tls_context_;
  const bool tls_required_;
  TlsWorkerStats tls_stats_;
  TlsTransport* tls_ = nullptr;   // under conn_ for an https:// member; released by it
  EtcdExchangeOwner* client_;
  uv_loop_t* loop_;
  const size_t endpoint_;
  const bool stream_;
  const uint64_t timeout_ms_;
  std::string request_;
  Connection conn_;
  ConnectionWrite write_;
  HttpParser parser_{HTTP_RESPONSE, this};
  uint64_t start_ms_ = 0;
  int status_ = 0;
  bool connected_ = false;
  bool done_ = false;        // the outcome is out (or abandoned): nothing more is reported
  bool overflow_ = false;
  std::optional<EtcdError> early_;   // a connect that could not start
  std::string head_;         // the response's bytes until its head is complete
  std::string body_;
  size_t line_start_ = 0;    // stream: where the next message starts in body_
  char read_[16 * 1024];
};

}  // namespace lb
