#include "lb/health/probe.h"

#include <new>

#include "lb/core/duration.h"
#include "lb/core/sys_error.h"

namespace lb {

Probe* Probe::start(uv_loop_t* loop, const sockaddr* addr, socklen_t, const CheckSpec& spec,
                    ProbeOwner* owner) noexcept {
  Probe* p = nullptr;
  try {
    p = new Probe(spec, owner);
  } catch (...) {
    return nullptr;
  }
  p->tcp_.data = p;
  p->timer_.data = p;
  p->connect_req_.data = p;
  p->write_req_.data = p;
  uv_tcp_init(loop, &p->tcp_);
  uv_timer_init(loop, &p->timer_);
  p->open_handles_ = 2;
  p->start_ns_ = uv_hrtime();
  uv_tcp_nodelay(&p->tcp_, 1);
  int rc = uv_tcp_connect(&p->connect_req_, &p->tcp_, addr, onConnect);
  if (rc != 0) {
    // Reported from the loop, as every other outcome is: the owner is still in the middle
    // of starting us.
    p->early_error_ = rc;
    uv_timer_start(&p->timer_, onTimer, 0, 0);
  } else {
    uv_timer_start(&p->timer_, onTimer, spec.timeout_ms, 0);
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
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), onClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
}

void Probe::onClosed(uv_handle_t* h) {
  auto* p = static_cast<Probe*>(h->data);
  if (--p->open_handles_ == 0) delete p;
}

void Probe::finish(CheckResult result, std::string detail) noexcept {
  if (state_ == State::kDone) return;
  state_ = State::kDone;
  ProbeOutcome o;
  o.result = result;
  o.detail = std::move(detail);
  o.seconds = static_cast<double>(uv_hrtime() - start_ns_) / 1e9;
  ProbeOwner* owner = owner_;
  owner_ = nullptr;
  if (owner != nullptr) owner->onProbeDone(o);
  close();
}

void Probe::onConnect(uv_connect_t* req, int status) {
  static_cast<Probe*>(req->data)->handleConnect(status);
}

void Probe::handleConnect(int status) noexcept {
  if (status == UV_ECANCELED || closing_ || state_ != State::kConnecting) return;
  if (status < 0) {
    finish(CheckResult::kFail, std::string("connect: ") + sysErrorText(status));
    return;
  }
  if (spec_.type == HealthCheckType::kTcp) {
    finish(CheckResult::kOk, "connected");
    return;
  }
  state_ = State::kExchanging;
  // spec_.request outlives the write: it is ours until the last close callback.
  uv_buf_t b = uv_buf_init(const_cast<char*>(spec_.request.data()),
                           static_cast<unsigned>(spec_.request.size()));
  int rc = uv_write(&write_req_, reinterpret_cast<uv_stream_t*>(&tcp_), &b, 1, onWrite);
  if (rc == 0) rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), onAlloc, onRead);
  if (rc != 0) finish(CheckResult::kFail, std::string("send: ") + sysErrorText(rc));
}

void Probe::onWrite(uv_write_t* req, int status) {
  auto* p = static_cast<Probe*>(req->data);
  if (status == UV_ECANCELED || p->closing_ || status == 0) return;
  p->finish(CheckResult::kFail, std::string("send: ") + sysErrorText(status));
}

void Probe::onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* p = static_cast<Probe*>(h->data);
  *buf = uv_buf_init(p->reply_.space(), static_cast<unsigned>(p->reply_.spaceLeft()));
}

void Probe::onRead(uv_stream_t* s, ssize_t n, const uv_buf_t*) {
  static_cast<Probe*>(s->data)->handleRead(n);
}

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
    finish(CheckResult::kOk, reply_.detail());
  else if (v == CheckReply::Verdict::kFail)
    finish(CheckResult::kFail, reply_.detail());
}

void Probe::onTimer(uv_timer_t* t) { static_cast<Probe*>(t->data)->handleTimer(); }

void Probe::handleTimer() noexcept {
  if (closing_) return;
  if (early_error_ != 0) {
    finish(CheckResult::kFail, std::string("connect: ") + sysErrorText(early_error_));
    return;
  }
  const std::string limit = formatDuration(Duration(spec_.timeout_ms));
  finish(CheckResult::kTimeout, state_ == State::kConnecting ? "no connect within " + limit
                                                               : "no reply within " + limit);
}

}  // namespace lb
