// HttpSession after a 101 Switching Protocols (kTunnel): the bytes are no longer HTTP, and pass
// both ways untouched. Each direction has at most one write in flight; while it is queued,
// reading from the side that feeds it stops. The first side to send EOF (or fail a read) ends
// the tunnel: what it sent before still reaches the other side (TunnelPhase says which write
// is being waited for), then both connections close; the timer closes a tunnel idle for
// timeouts.idle. Once a direction's buffered bytes are out it is spliced instead, when both
// sockets are plain (spliceTunnel).
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
      if (w == 1) setDownReading(false);   // handleUpWrite resumes
    }
    if (!up_->writing() && !pump_open_) {
      if (in_.buf != nullptr) in_.len = in_.pos = 0;
      spliceTunnel(true);
      if (state_ != State::kTunnel || up_ == nullptr) return;
      if (!pump_open_) setDownReading(true);
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
    if (!io_.down_writing && !tunnel_pump_open_) {
      if (upin_.buf != nullptr) upin_.len = upin_.pos = 0;
      spliceTunnel(false);
      if (state_ != State::kTunnel || up_ == nullptr) return;
      if (!tunnel_pump_open_) setUpReading(true);
    }
  }
}

// A direction with nothing buffered left goes kernel to kernel from here on (both sockets
// plain, splice not refused on this connection): an unbounded pump, as a tcp listener's.
void HttpSession::spliceTunnel(bool client_to_backend) noexcept {
  if (splice_refused_) return;
  SplicePump& p = client_to_backend ? body_pump_ : tunnel_pump_;
  bool& open = client_to_backend ? pump_open_ : tunnel_pump_open_;
  if (open) return;
  Connection& from = client_to_backend ? client_ : up_->connection();
  Connection& to = client_to_backend ? up_->connection() : client_;
  if (p.start(from, to, SplicePump::kUnbounded) != 0) return;
  open = true;
  if (client_to_backend) {
    pump_request_ = true;
    if (in_.buf != nullptr) releaseBlock(&in_);
  } else {
    io_.up_reading = false;   // the pump has the backend's read
    if (upin_.buf != nullptr) releaseBlock(&upin_);
  }
  p.pumpNow();
}

// A tunnel's pump ended: the source's EOF with every byte before it delivered (the tunnel
// ends, as endTunnel after the flush), an error either side (it ends too), or splice refused
// with nothing moved (that direction copies, and so does any later pump of this connection).
void HttpSession::onTunnelPumpDone(SplicePump& p, int status) noexcept {
  const bool client_to_backend = &p == &body_pump_;
  if (client_to_backend) {
    pump_open_ = false;
  } else {
    tunnel_pump_open_ = false;
  }
  p.stop();
  if (status == SplicePump::kUnsupported) {
    splice_refused_ = true;
    if (client_to_backend)
      setDownReading(true);
    else
      setUpReading(true);
    return;
  }
  closeAll();
}

// One side sent EOF (or its read failed). Close now, or once the write carrying that side's
// last bytes to the other side completes (handleUpWrite, handleDownWrite). A second EOF
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
