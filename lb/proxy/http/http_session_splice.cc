// A response body of known length moved backend to client by a SplicePump
// (lb/net/splice_pump.h): the parser has read the head and whatever body bytes came with it,
// and the rest (llhttp's remaining Content-Length) goes kernel to kernel. Counters, the idle
// deadline and the access log's bytes are kept as the copy path keeps them; the exchange ends
// as if the parser had read the last byte.
#include "lb/proxy/http/http_session.h"

#include "lb/runtime/worker_env.h"

namespace lb {

// From pumpResponse, with every byte so far written to the client and upin_ empty. Only for a
// request already sent whole (nothing else then writes to the backend) and plain sockets.
bool HttpSession::spliceResponseBody() noexcept {
  if (state_ != State::kExchange || ex_->response != ResponsePhase::kBody || up_ == nullptr ||
      io_.down_writing || ex_->request != RequestPhase::kDone || pump_open_)
    return false;
  const uint64_t left = ex_->resp.lengthBodyLeft();
  if (left < kSpliceMin) return false;
  setUpReading(false);
  if (body_pump_.start(up_->connection(), client_, left) != 0) return false;
  pump_open_ = true;
  if (upin_.buf != nullptr) releaseBlock(&upin_);   // empty: the pump needs no block
  return true;
}

void HttpSession::stopBodyPump() noexcept {
  if (pump_open_) body_pump_.stop();   // idempotent; after onPumpDone too
}

void HttpSession::onPumpRead(SplicePump&, size_t n) noexcept {
  if (ex_ == nullptr) return;
  ex_->route.stats->bytes_rx.add(n);
  touch(lst_->config->timeouts.idle.count());
}

void HttpSession::onPumpDone(SplicePump& p, int status) noexcept {
  if (ex_ != nullptr) ex_->log.bytes_out += p.bytesWritten();
  p.stop();
  if (state_ != State::kExchange) return;
  if (status == SplicePump::kUnsupported) {   // nothing moved: the copy path reads it all
    setUpReading(true);
    return;
  }
  if (status != 0) {
    // The origin closed or failed mid-body, or the client went away: the client has a head,
    // so all lb can do is cut the response short (as the copy path does).
    closeAll();
    return;
  }
  ex_->response = ResponsePhase::kDone;   // the parser saw the head; the body's length is met
  finishExchange();
}

void HttpSession::onPumpClosed(SplicePump&) noexcept {
  pump_open_ = false;
  if (conn_closed_) delete this;
}

}  // namespace lb
