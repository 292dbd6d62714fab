// A body of known length moved by a SplicePump (lb/net/splice_pump.h), a response's backend to
// client or a request's client to backend: the parser has read the head and whatever body
// bytes came with it, and the rest (llhttp's remaining Content-Length) goes kernel to kernel;
// the exchange ends as if the parser had read the last byte. A chunked body's large chunk
// goes the same way, its data only: the parser has read its size line, the pump moves the
// data bytes that line announced, and the parser reads on from the CRLF after them
// (HttpParser::skipChunkData), so the framing is checked as strictly as when it is copied.
// Counters, the idle deadline and the access log's bytes are kept as the copy path keeps them.
#include "lb/proxy/http/http_session.h"

#include "lb/runtime/worker_env.h"

namespace lb {

// From pumpResponse, with every byte so far written to the client and upin_ empty. Only for a
// request already sent whole (nothing else then writes to the backend) and plain sockets.
bool HttpSession::spliceResponseBody() noexcept {
  if (state_ != State::kExchange || ex_->response != ResponsePhase::kBody || up_ == nullptr ||
      io_.down_writing || ex_->request != RequestPhase::kDone || pump_open_ || splice_refused_)
    return false;
  const bool chunk = ex_->resp.chunked();
  const uint64_t left = chunk ? ex_->resp.chunkDataLeft() : ex_->resp.lengthBodyLeft();
  if (left < kSpliceMin) return false;
  // The backend's read stays as it is: the pump takes it over (its ready hook) and leaves it
  // stopped when it ends.
  if (body_pump_.start(up_->connection(), client_, left) != 0) return false;
  io_.up_reading = false;
  pump_open_ = true;
  pump_request_ = false;
  pump_chunk_ = chunk;
  if (upin_.buf != nullptr) releaseBlock(&upin_);   // empty: the pump needs no block
  body_pump_.pumpNow();
  return true;
}

// From pumpRequest, with every buffered body byte written to the backend and in_ empty: the
// rest of a Content-Length request body goes client to backend. The response may be read and
// written meanwhile (an early answer): it uses the other two directions, through libuv.
bool HttpSession::spliceRequestBody() noexcept {
  if (state_ != State::kExchange || ex_->request != RequestPhase::kBody || up_ == nullptr ||
      up_->writing() || pump_open_ || splice_refused_ || io_.down_eof)
    return false;
  const bool chunk = ex_->req.chunked();
  const uint64_t left = chunk ? ex_->req.chunkDataLeft() : ex_->req.lengthBodyLeft();
  if (left < kSpliceMin) return false;
  if (body_pump_.start(client_, up_->connection(), left) != 0) return false;
  pump_open_ = true;
  pump_request_ = true;
  pump_chunk_ = chunk;
  if (in_.buf != nullptr) releaseBlock(&in_);   // empty: the next bytes take a new one
  head_end_ = 0;
  body_pump_.pumpNow();
  return true;
}

void HttpSession::stopPumps() noexcept {
  if (tunnel_pump_open_) {
    tunnel_pump_open_ = false;
    tunnel_pump_.stop();
  }
  if (!pump_open_) return;
  pump_open_ = false;
  body_pump_.stop();
}

void HttpSession::onPumpRead(SplicePump& p, size_t n) noexcept {
  lstats_->spliced_bytes.add(n);
  if (ex_ == nullptr) return;
  if (&p == &tunnel_pump_)
    ex_->route.stats->bytes_rx.add(n);
  else if (pump_request_)
    ex_->route.stats->bytes_tx.add(n);
  else
    ex_->route.stats->bytes_rx.add(n);
  touch(lst_->config->timeouts.idle.count());
}

void HttpSession::onPumpDone(SplicePump& p, int status) noexcept {
  if (state_ == State::kTunnel) {
    onTunnelPumpDone(p, status);
    return;
  }
  const bool request = pump_request_;
  if (ex_ != nullptr) (request ? ex_->log.bytes_in : ex_->log.bytes_out) += p.bytesWritten();
  const bool on_source = p.errorOnSource();
  if (!request && status == 0 && state_ == State::kExchange && up_ != nullptr) {
    // The whole body (or chunk) is on the client: the backend's read stays as the pump left
    // it, for the pool to watch the idle connection (releaseUpstream) or for the next chunk's
    // size line, with no stop/start pair between.
    pump_open_ = false;
    body_pump_.stop(true);
    io_.up_reading = up_->connection().reading();
  } else {
    stopBodyPump();
  }
  if (state_ != State::kExchange) return;
  if (status == SplicePump::kUnsupported) {
    // Nothing moved: the copy path reads it all, and this connection tries no more pumps.
    splice_refused_ = true;
    if (request)
      setDownReading(true);
    else
      setUpReading(true);
    return;
  }
  if (request) {
    if (status == 0 && pump_chunk_) {
      // The chunk's data is on the backend: the parser goes on at the CRLF after it, from the
      // client's next read (handleDownRead), and checks the framing from there as before.
      ex_->req.skipChunkData(p.bytesWritten());
      setDownReading(true);
    } else if (status == 0) {   // the body's length is met: on as if the parser had read it
      ex_->request = RequestPhase::kDone;
      pumpRequest();
    } else if (status == UV_EOF || on_source) {
      io_.down_eof = true;   // the client left (or failed) mid-body, as handleClientEof
      closeAll();
    } else {
      upstreamFailed(false);   // the backend's socket failed: 502, or cut short
    }
    return;
  }
  if (status != 0) {
    // The origin closed or failed mid-body, or the client went away: the client has a head,
    // so all lb can do is cut the response short (as the copy path does).
    closeAll();
    return;
  }
  if (pump_chunk_) {
    // The chunk's data is on the client: the parser goes on at the CRLF after it, read and
    // checked as before (pumpResponse reads again; reading may still be on).
    ex_->resp.skipChunkData(p.bytesWritten());
    pumpResponse();
    return;
  }
  ex_->response = ResponsePhase::kDone;   // the parser saw the head; the body's length is met
  finishExchange();
}
}  // namespace lb
