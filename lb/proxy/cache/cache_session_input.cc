// CacheSession's input: reading the client's socket into a pool block (a heap buffer that
// doubles for a command larger than one), handing complete bytes to the protocol's parse(),
// and the limit past which a command is refused as too large. The rest of the session is in
// cache_session.cc.
#include <cstring>
#include <new>

#include "lb/proxy/cache/cache_session.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/runtime/worker_env.h"

namespace lb {

namespace {
// Below this much room after the unparsed bytes, they move to the front of the buffer.
constexpr size_t kMinReadRoom = 4096;
// A command may exceed max_request_bytes by its framing (headers, CRLFs) before the parser
// has seen enough to refuse it.
constexpr size_t kFramingSlack = 64 * 1024;
}  // namespace

void CacheSession::readStart() noexcept {
  if (state_ != State::kServing || eof_) return;
  conn_.readStart();
}

void CacheSession::readStop() noexcept { conn_.readStop(); }

// Reads land after the unparsed bytes (lingering, the connection drops them itself).
void CacheSession::onAlloc(Connection&, uv_buf_t* buf) noexcept {
  if (in_ == nullptr) {
    in_ = env_.buffers().get();
    in_cap_ = BufferPool::kBlockSize;
    in_pooled_ = true;
    in_pos_ = in_len_ = 0;
  }
  if (in_pos_ > 0 && in_cap_ - in_len_ < kMinReadRoom) {
    memmove(in_, in_ + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ == in_cap_ && !growInput(in_cap_ * 2)) {
    *buf = uv_buf_init(nullptr, 0);   // UV_ENOBUFS follows: the command is too large
    return;
  }
  *buf = uv_buf_init(in_ + in_len_, static_cast<unsigned>(in_cap_ - in_len_));
}

// A command larger than the buffer: a heap buffer of at least `want` bytes and at least
// twice the current one (at most the listener's max_request_bytes plus framing), the
// unparsed bytes moved to its front. Doubling keeps a large command's buffering linear in
// its size: growing only to what the parser asked for next copied the whole command again
// on every read, one read's worth of room at a time.
bool CacheSession::growInput(size_t want) noexcept {
  const size_t max = maxInput();
  if (in_cap_ >= max) return false;
  if (want < in_cap_ * 2) want = in_cap_ * 2;
  if (want > max) want = max;
  char* bigger = new (std::nothrow) char[want];
  if (bigger == nullptr) return false;
  const size_t len = in_len_ - in_pos_;
  memcpy(bigger, in_ + in_pos_, len);
  releaseInput();
  in_ = bigger;
  in_cap_ = want;
  in_len_ = len;
  in_pooled_ = false;
  return true;
}

void CacheSession::releaseInput() noexcept {
  if (in_ != nullptr) {
    if (in_pooled_)
      env_.buffers().put(in_);
    else
      delete[] in_;
  }
  in_ = nullptr;
  in_pos_ = in_len_ = in_cap_ = 0;
  in_pooled_ = false;
}

void CacheSession::onRead(Connection&, char*, size_t n) noexcept {
  if (state_ != State::kServing && state_ != State::kFinishing) return;
  if (n == 0) {
    // A read that found nothing (EAGAIN) after onAlloc took a block: an idle client keeps none.
    if (in_ != nullptr && in_pos_ == in_len_) releaseInput();
    return;
  }
  in_len_ += n;
  last_activity_ms_ = uv_now(env_.loop());
  parseInput();
}

// The client sent all it will: answer what it sent, then close.
void CacheSession::onEof(Connection&) noexcept {
  if (state_ != State::kServing && state_ != State::kFinishing) return;
  eof_ = true;
  if (in_ != nullptr && in_pos_ == in_len_) releaseInput();
  finish(CacheOutcome::kOk);
}

void CacheSession::onError(Connection&, int status) noexcept {
  if (state_ != State::kServing && state_ != State::kFinishing) return;
  if (status == UV_ENOBUFS)
    tooLarge();   // the buffer is at its limit and the command at its start is not whole
  else
    closeNow(CacheOutcome::kClientReset);
}

void CacheSession::parseInput() noexcept {
  if (state_ == State::kServing) followSnapshot();
  while (state_ == State::kServing) {
    if (skip_ > 0) {
      const size_t drop = skip_ < in_len_ - in_pos_ ? skip_ : in_len_ - in_pos_;
      in_pos_ += drop;
      skip_ -= drop;
      if (skip_ > 0) break;
    }
    const size_t avail = in_len_ - in_pos_;
    if (avail == 0 || avail < need_) break;
    if (!canAccept()) break;
    need_ = 0;
    const size_t used = parse(in_ + in_pos_, avail);
    // Units picked for a command that sent no fragment with them (refused after its picks).
    cache_.picks().release();
    in_pos_ += used;
    if (skip_ == 0 && (used == 0 || need_ > 0)) break;
  }
  if (in_ != nullptr && in_pos_ == in_len_) {
    releaseInput();
  } else if (state_ == State::kServing && need_ > maxInput()) {
    tooLarge();   // the parser knows already that the command will not fit
  } else if (need_ > in_cap_ - in_pos_ && state_ == State::kServing) {
    growInput(need_);   // failing here leaves the buffer full: the next read reports ENOBUFS
  }
  if (state_ == State::kServing && !canAccept()) readStop();
}

// A command larger than limits.max_request_bytes (with its framing): the client gets the
// protocol's "too large" error after the answers to what it sent before, then the
// connection closes (nothing after an unread command can be parsed).
void CacheSession::tooLarge() noexcept {
  if (state_ != State::kServing) return;
  if (CacheCommand* cmd = beginCommand(0))
    answerError(cmd, CacheErrorReason::kTooLarge, tooLargeReply());
  finish(CacheOutcome::kProtocolError);
}

size_t CacheSession::maxInput() const noexcept {
  return static_cast<size_t>(limits().max_request_bytes) + kFramingSlack;
}

bool CacheSession::canAccept() const noexcept {
  return in_flight_ < listener_->config->limits.max_in_flight && out_.size() < kHighWatermark;
}

}  // namespace lb
