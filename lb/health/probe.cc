#include "lb/health/probe.h"

#include <new>

#include "lb/core/duration.h"
#include "lb/core/sys_error.h"
#include "lb/tls/tls_transport.h"

namespace lb {

Probe::Probe(uv_loop_t* loop, const CheckSpec& spec, ProbeOwner* owner)
    : spec_(spec), owner_(owner), reply_(spec_), conn_(*this, loop) {
  uv_timer_init(loop, &timer_);
  timer_.data = this;
}

Probe* Probe::start(uv_loop_t* loop, const sockaddr* addr, socklen_t, const CheckSpec& spec,
                    ProbeOwner* owner) noexcept {
  Probe* p = nullptr;
  try {
    p = new Probe(loop, spec, owner);
  } catch (...) {
    return nullptr;
  }
  p->start_ns_ = uv_hrtime();
  p->conn_.setNoDelay();
  int rc = 0;
  if (spec.tls != nullptr) {
    // The main thread's own session slot (the last one): a check resumes the session the
    // previous check got, as a worker's connections do theirs.
    std::shared_ptr<TlsWorkerStats> stats(std::shared_ptr<void>(), &p->tls_stats_);
    p->tls_ = TlsTransport::connect(spec.tls, std::move(stats), spec.tls->mainSlot(), addr);
    if (p->tls_ == nullptr) rc = UV_ENOMEM;
  }
  // The check's timer bounds the connect (and its handshake) too.
  if (rc == 0) rc = p->conn_.connect(addr, 0, p->tls_);
  if (rc != 0) {
    // Reported from the loop, as every other outcome is: the owner is still in the middle
    // of starting us.
    p->early_error_ = rc;
    uv_timer_start(&p->timer_, onDeadline, 0, 0);
  } else {
    uv_timer_start(&p->timer_, onDeadline, spec.timeout_ms, 0);
  }
  return p;
}

void Probe::cancel() noexcept {
  owner_ = nullptr;
  state_ = State::kDone;
  close();
}

void Probe::close() noexcept {
  if (closing_) return;
  closing_ = true;
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onTimerClosed);
  conn_.close();
}

void Probe::onTimerClosed(uv_handle_t* h) { static_cast<Probe*>(h->data)->closedOne(); }

void Probe::onClosed(Connection&) noexcept { closedOne(); }

void Probe::closedOne() noexcept {
  if (--open_ == 0) delete this;
}

void Probe::finish(CheckResult result, std::string detail, std::string identity) noexcept {
  if (state_ == State::kDone) return;
  state_ = State::kDone;
  ProbeOutcome o;
  o.result = result;
  o.detail = std::move(detail);
  o.identity = std::move(identity);
  o.seconds = static_cast<double>(uv_hrtime() - start_ns_) / 1e9;
  ProbeOwner* owner = owner_;
  owner_ = nullptr;
  if (owner != nullptr) owner->onProbeDone(o);
  close();
}

void Probe::onConnected(Connection&, int status) noexcept {
  if (closing_ || state_ != State::kConnecting) return;
  if (status < 0) {
    if (tls_ != nullptr && !tls_->failureText().empty())
      finish(CheckResult::kFail, "tls handshake: " + tls_->failureText());
    else
      finish(CheckResult::kFail, std::string("connect: ") + sysErrorText(status));
    return;
  }
  if (spec_.type == HealthCheckType::kTcp) {
    finish(CheckResult::kOk, tls_ != nullptr ? "tls handshake done" : "connected");
    return;
  }
  state_ = State::kExchanging;
  // spec_.request outlives the write: it is ours until the last close callback.
  uv_buf_t b = uv_buf_init(const_cast<char*>(spec_.request.data()),
                           static_cast<unsigned>(spec_.request.size()));
  ssize_t rc = conn_.write(&write_, &b, 1);
  if (rc >= 0) rc = conn_.readStart();
  if (rc < 0) finish(CheckResult::kFail, std::string("send: ") + sysErrorText(static_cast<int>(rc)));
}

void Probe::onWritten(Connection&, ConnectionWrite*, int status) noexcept {
  if (status == UV_ECANCELED || closing_ || status == 0) return;
  finish(CheckResult::kFail, std::string("send: ") + sysErrorText(status));
}

void Probe::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  *buf = uv_buf_init(reply_.space(), static_cast<unsigned>(reply_.spaceLeft()));
}

void Probe::onRead(Connection&, char*, size_t n) noexcept {
  handleRead(static_cast<ssize_t>(n));
}

void Probe::onEof(Connection&) noexcept { handleRead(UV_EOF); }

void Probe::onError(Connection&, int status) noexcept { handleRead(status); }

void Probe::handleRead(ssize_t n) noexcept {
  if (closing_ || state_ != State::kExchanging || n == 0) return;
  CheckReply::Verdict v;
  if (n > 0) {
    v = reply_.received(static_cast<size_t>(n));
  } else if (n == UV_EOF) {
    v = reply_.closed();
  } else {
    finish(CheckResult::kFail, std::string("read: ") + sysErrorText(static_cast<int>(n)));
    return;
  }
  if (v == CheckReply::Verdict::kPass)
    finish(CheckResult::kOk, reply_.detail(), reply_.identity());
  else if (v == CheckReply::Verdict::kFail)
    finish(CheckResult::kFail, reply_.detail());
}

void Probe::onDeadline(uv_timer_t* t) { static_cast<Probe*>(t->data)->handleTimer(); }

void Probe::handleTimer() noexcept {
  if (closing_) return;
  if (early_error_ != 0) {
    finish(CheckResult::kFail, std::string("connect: ") + sysErrorText(early_error_));
    return;
  }
  const std::string limit = formatDuration(Duration(spec_.timeout_ms));
  std::string what = "no reply within ";
  if (state_ == State::kConnecting)
    what = conn_.handshaking() ? "no TLS handshake within " : "no connect within ";
  finish(CheckResult::kTimeout, what + limit);
}

}  // namespace lb
