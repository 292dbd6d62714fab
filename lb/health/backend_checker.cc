#include "lb/health/backend_checker.h"

#include <cstring>
#include <new>

#include "lb/core/address.h"

namespace lb {

BackendChecker::BackendChecker(uv_loop_t* loop, CheckSink* sink,
                               std::shared_ptr<BackendState> backend, const CheckSpec& spec,
                               const sockaddr_storage& addr, socklen_t len, uint64_t seed)
    : loop_(loop),
      sink_(sink),
      backend_(std::move(backend)),
      spec_(spec),
      addr_(addr),
      len_(len),
      rng_(seed | 1) {}

BackendChecker* BackendChecker::start(uv_loop_t* loop, CheckSink* sink,
                                      std::shared_ptr<BackendState> backend,
                                      const CheckSpec& spec, const sockaddr_storage& addr,
                                      socklen_t len, uint64_t first_delay_ms,
                                      uint64_t seed) noexcept {
  BackendChecker* c = nullptr;
  try {
    c = new BackendChecker(loop, sink, std::move(backend), spec, addr, len, seed);
  } catch (...) {
    return nullptr;
  }
  uv_timer_init(loop, &c->timer_);
  c->timer_.data = c;
  uv_timer_start(&c->timer_, onTimer, first_delay_ms, 0);
  return c;
}

bool BackendChecker::probes(const sockaddr_storage& addr, socklen_t len) const noexcept {
  return sameAddress(addr_, len_, addr, len);
}

void BackendChecker::stop() noexcept {
  if (stopped_) return;
  stopped_ = true;
  if (probe_ != nullptr) {
    probe_->cancel();
    probe_ = nullptr;
  }
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
}

void BackendChecker::onClosed(uv_handle_t* h) { delete static_cast<BackendChecker*>(h->data); }

void BackendChecker::onTimer(uv_timer_t* t) { static_cast<BackendChecker*>(t->data)->runCheck(); }

// xorshift64 (Marsaglia 2003): up to an eighth of the interval.
uint64_t BackendChecker::jitter() noexcept {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return rng_ % (spec_.interval_ms / 8 + 1);
}

void BackendChecker::runCheck() noexcept {
  if (stopped_ || probe_ != nullptr) return;
  started_at_ = uv_now(loop_);
  probe_ = Probe::start(loop_, reinterpret_cast<const sockaddr*>(&addr_), len_, spec_, this);
  if (probe_ == nullptr) {   // out of memory: a failed check, and try again next time
    ProbeOutcome o;
    o.detail = "out of memory";
    onProbeDone(o);
  }
}

void BackendChecker::onProbeDone(const ProbeOutcome& outcome) noexcept {
  probe_ = nullptr;
  if (stopped_) return;
  sink_->onCheckDone(backend_.get(), outcome);
  const uint64_t elapsed = uv_now(loop_) - started_at_;
  const uint64_t gap = spec_.interval_ms - jitter();
  uv_timer_start(&timer_, onTimer, gap > elapsed ? gap - elapsed : 0, 0);
}

}  // namespace lb
