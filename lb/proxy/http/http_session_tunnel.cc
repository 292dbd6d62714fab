// HttpSession after a 101 Switching Protocols (kTunnel): the bytes are no longer HTTP, and pass
// both ways untouched. Each direction has at most one write in flight; while it is queued,
// reading from the side that feeds it stops. The first side to send EOF (or fail a read) ends
// the tunnel: what it sent before still reaches the other side (TunnelPhase says which write
// is being waited for), then both connections close; the timer closes a tunnel idle for
// timeouts.idle.
#include "lb/proxy/http/http_session.h"

namespace lb {

// The backend's 101 head has been written (or queued) to the client. Client bytes that came
// after the upgrade request wait in in_, backend bytes after the 101 in upin_.
void HttpSession::startTunnel() noexcept {
  state_ = State::kTunnel;
  tunnel_ = TunnelPhase::kOpen;
  pumpTunnel();
}

void HttpSession::pumpTunnel() noexcept {
  if (state_ != State::kTunnel || up_ == nullptr) return;
  // client -> backend
  if (!up_->writing()) {
    if (in_.buf != nullptr && in_.pos < in_.len) {
      const char* p = in_.buf + in_.pos;
      size_t n = in_.len - in_.pos;
      in_.pos = in_.len;
      ex_->route.stats->bytes_tx.add(n);
      int w = up_->write(p, n);
      if (w < 0) {
        closeAll();
        return;
      }
      if (w == 1) setDownReading(false);   // onUpstreamWrite resumes
    }
    if (!up_->writing()) {
      if (in_.buf != nullptr) in_.len = in_.pos = 0;
      setDownReading(true);
    }
  }
  // backend -> client
  if (!io_.down_writing) {
    if (upin_.buf != nullptr && upin_.pos < upin_.len) {
      const char* p = upin_.buf + upin_.pos;
      size_t n = upin_.len - upin_.pos;
      upin_.pos = upin_.len;
      if (writeDown(p, n) < 0) {   // queued: writeDown stopped the backend's reads
        closeAll();
        return;
      }
    }
    if (!io_.down_writing) {
      if (upin_.buf != nullptr) upin_.len = upin_.pos = 0;
      setUpReading(true);
    }
  }
}

// One side sent EOF (or its read failed). Close now, or once the write carrying that side's
// last bytes to the other side completes (onUpstreamWrite, handleDownWrite). A second EOF
// while waiting closes at once.
void HttpSession::endTunnel(TunnelPhase ended) noexcept {
  if (tunnel_ != TunnelPhase::kOpen) {
    closeAll();
    return;
  }
  tunnel_ = ended;
  const bool flushing = ended == TunnelPhase::kClientEnded
                            ? up_ != nullptr && up_->writing()
                            : io_.down_writing;
  if (!flushing) closeAll();
}

}  // namespace lb
