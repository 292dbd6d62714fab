// HttpSession's connection to the client: accept, reads and writes, the timer each state
// runs, the errors lb answers itself, the lingering close and the close. Each event handler
// here is a switch over State, so what an event means in each state is in one place.
#include "lb/proxy/http/http_session.h"

#include <cstring>

#include "lb/http/rewrite.h"

namespace lb {

namespace {
// After lb answers an error it half-closes and keeps reading (discarding) this long, so the
// client reads the answer instead of a reset caused by its own unread bytes (nginx's
// lingering close).
constexpr uint64_t kLingerMs = 1000;
// How long a drain leaves an idle keep-alive connection open for the request that may already
// be on its way (HttpSession::drain).
constexpr uint64_t kDrainGraceMs = 1000;
}  // namespace

void HttpSession::accept(WorkerEnv* worker, uv_stream_t* server, const AcceptTransport* transport,
                         const std::shared_ptr<const Snapshot>& snap, const ListenerSnapshot* ls,
                         Admission admission) {
  auto* s = new (std::nothrow) HttpSession(worker, snap, ls);
  if (s == nullptr) return;
  if (s->client_.accept(server, transport) != 0) {
    s->closeAll();
    return;
  }
  s->start(admission);
}

HttpSession::HttpSession(WorkerEnv* worker, const std::shared_ptr<const Snapshot>& snap,
                         const ListenerSnapshot* ls)
    : worker_(worker),
      snap_(snap),
      lst_(ls),
      cluster_(&snap->clusters[ls->cluster]),
      lstats_(&ls->state->per_worker[worker->index()]),
      client_(*this, worker->loop()),
      body_pump_(*this, worker->loop()),
      tunnel_pump_(*this, worker->loop()) {
  worker_->link(this);
  lstats_->connections_active.add(1);
}

HttpSession::~HttpSession() {
  releaseExchange();
  releaseBlock(&in_);
  releaseBlock(&upin_);
  worker_->buffers().put(out_);
  worker_->buffers().put(rout_);
}

void HttpSession::start(Admission admission) noexcept {
  worker_->noteAccepted();
  client_.setNoDelay();
  const sockaddr* peer = client_.peer();
  if (peer->sa_family == AF_INET6)
    uv_ip6_name(reinterpret_cast<const sockaddr_in6*>(peer), client_ip_, sizeof client_ip_);
  else
    uv_ip4_name(reinterpret_cast<const sockaddr_in*>(peer), client_ip_, sizeof client_ip_);
  client_ip_len_ = static_cast<uint32_t>(strlen(client_ip_));
  // limits.max_connections (the listener's admission, lb/runtime/listener.h): past it, 503
  // and close, as HAProxy answers past maxconn. A reason of its own: an alert on no_backend
  // means the fleet is down, and this is lb shedding load with every backend up.
  if (admission == Admission::kOverLimit) {
    sendError(503, HttpErrorReason::kOverLimit);
    return;
  }
  // A plain connection may open with the h2c preface; a TLS one says h2 by ALPN instead
  // (onEstablished).
  h2c_possible_ = client_.plain() && h2Start() != nullptr;
  if (h2c_possible_ && lst_->config->h2.cleartext == H2Cleartext::kOnly) {
    startH2(nullptr, 0);   // nghttp2 checks the preface itself
    return;
  }
  // kHead from accept: a new connection owes a request head within the header timeout
  // (slowloris).
  armTimer(lst_->config->timeouts.header.count());
  setDownReading(true);
}

// ---- both connections' events ------------------------------------------------------------
// Each goes to its side's handler: the client's below, the backend's in
// http_session_upstream.cc.

void HttpSession::onConnected(Connection& c, int status) noexcept {
  if (!isClient(c)) handleUpConnect(status);
}

void HttpSession::onAlloc(Connection& c, uv_buf_t* buf) noexcept {
  if (isClient(c))
    allocDown(buf);
  else
    allocUp(buf);
}

void HttpSession::onRead(Connection& c, char*, size_t n) noexcept {
  if (isClient(c))
    handleDownRead(static_cast<ssize_t>(n));
  else
    handleUpRead(static_cast<ssize_t>(n));
}

void HttpSession::onEof(Connection& c) noexcept {
  if (isClient(c))
    handleDownRead(UV_EOF);
  else
    handleUpRead(UV_EOF);
}

void HttpSession::onError(Connection& c, int status) noexcept {
  if (isClient(c))
    handleDownRead(status);
  else
    handleUpRead(status);
}

void HttpSession::onWritten(Connection& c, ConnectionWrite*, int status) noexcept {
  if (!isClient(c)) {
    handleUpWrite(status);
    return;
  }
  io_.down_writing = false;
  if (state_ == State::kClosed || state_ == State::kH2) return;
  handleDownWrite(status);
}

void HttpSession::onEstablished(Connection& c) noexcept {
  if (isClient(c) && h2Start() != nullptr && c.transport()->protocol() == "h2")
    startH2(nullptr, 0);
}

void HttpSession::onTimer(Connection&) noexcept {
  if (state_ != State::kClosed && state_ != State::kH2) handleTimer();
}

// The lingering close ended: the client read lb's answer and closed, or 1 s passed.
void HttpSession::onLingerDone(Connection&) noexcept { closeAll(); }

// The client's connection's last callback is back: nothing of libuv's refers to this session
// now.
void HttpSession::onClosed(Connection&) noexcept {
  stopBodyPump();   // stopped already (closeAll): nothing of it refers to this session
  if (state_ == State::kH2) {   // the room handed the connection back to close it
    worker_->unlink(this);
    lstats_->connections_active.add(-1);
    delete h2_;
  }
  delete this;
}

// ---- HTTP/2 ------------------------------------------------------------------------------

// RFC 9113 §3.4: a client that knows the server speaks HTTP/2 opens with this, which no
// HTTP/1.1 request line can start with (llhttp would read a version 2.0 request: 505).
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// A new plain connection's first bytes: true while they are the preface's first bytes and
// more are needed to tell, or once they are the whole preface (startH2 has taken over).
bool HttpSession::maybeH2c() noexcept {
  const size_t n = std::min<size_t>(in_.len, kH2Preface.size());
  if (memcmp(in_.buf, kH2Preface.data(), n) != 0) {
    h2c_possible_ = false;
    return false;
  }
  if (n == kH2Preface.size()) startH2(in_.buf, in_.len);
  return true;
}

void HttpSession::startH2(const char* bytes, size_t len) noexcept {
  h2c_possible_ = false;
  H2Start start;
  start.worker = worker_;
  start.snapshot = snap_;
  start.listener = lst_;
  start.client = &client_;
  start.shell = this;
  start.client_ip = {client_ip_, client_ip_len_};
  start.tls = !client_.plain();
  start.bytes = bytes;
  start.len = len;
  deadline_ = timer_due_ = 0;
  client_.stopTimer();
  h2_ = h2Start()(start);
  if (h2_ == nullptr) {
    closeAll();
    return;
  }
  state_ = State::kH2;
  releaseExchange();
  releaseBlock(&in_);   // the room took what it holds
}

// ---- the client's connection ------------------------------------------------------------

void HttpSession::allocDown(uv_buf_t* buf) noexcept {
  if (in_.buf == nullptr) {
    in_.buf = worker_->buffers().get();
    in_.len = in_.pos = 0;
  }
  // A request head is read in kHeadRead pieces, as a response's (allocUp): body
  // bytes read with it are copied, the rest of a large body may be spliced. A body in large
  // chunks is read up to the next chunk's first bytes (chunkedReadCap).
  size_t room = BufferPool::kBlockSize - in_.len;
  if ((state_ == State::kIdle || state_ == State::kHead) && room > kHeadRead) room = kHeadRead;
  if (state_ == State::kExchange && ex_ != nullptr && ex_->request == RequestPhase::kBody &&
      spliceable())
    room = chunkedReadCap(ex_->req, room);
  *buf = uv_buf_init(in_.buf + in_.len, static_cast<unsigned>(room));
}

// ---- reading from the client -------------------------------------------------------------

void HttpSession::setDownReading(bool on) noexcept {
  if (state_ == State::kClosed || on == client_.reading() || (on && io_.down_eof)) return;
  if (on)
    client_.readStart();
  else
    client_.readStop();
}

void HttpSession::handleDownRead(ssize_t n) noexcept {
  if (state_ == State::kClosed) return;
  if (n == 0) {
    // libuv took a block from allocDown and the read found nothing (EAGAIN): a connection
    // waiting for its request must not keep it.
    if ((state_ == State::kIdle || state_ == State::kHead) && in_.len == 0) releaseBlock(&in_);
    return;
  }
  if (n == UV_ENOBUFS) {   // the block is full: wait until it drains (never spin on it)
    setDownReading(false);
    return;
  }
  if (n < 0) {
    handleClientEof();
    return;
  }
  in_.len += static_cast<uint32_t>(n);
  // A request's first byte (after keep-alive, or a new connection's) takes its exchange.
  if ((state_ == State::kIdle || state_ == State::kHead) && !acquireExchange()) {
    closeAll();
    return;
  }
  switch (state_) {
    case State::kIdle:
      // From now on the request's head owes the header timeout.
      h2c_possible_ = false;
      state_ = State::kHead;
      armTimer(lst_->config->timeouts.header.count());
      processHead();
      return;
    case State::kHead:
      if (h2c_possible_ && maybeH2c()) return;
      processHead();
      return;
    case State::kConnecting:
      // Body bytes or the next request's: they wait in the block until the exchange starts
      // (a full block stops reading).
      if (in_.len >= BufferPool::kBlockSize) setDownReading(false);
      return;
    case State::kExchange:
      touch(lst_->config->timeouts.idle.count());
      if (ex_->request == RequestPhase::kBody) {
        pumpRequest();
        return;
      }
      // Pipelined bytes of the next request (or of this one, while its head is still being
      // written): they wait, unparsed. Reading goes on only to see the client leave; a full
      // block stops it.
      if (in_.len >= BufferPool::kBlockSize) setDownReading(false);
      return;
    case State::kTunnel:
      touch(lst_->config->timeouts.idle.count());
      pumpTunnel();
      return;
    case State::kLingering:
      in_.len = in_.pos = 0;   // discard
      return;
    case State::kH2:   // the room hears the connection's reads
    case State::kClosed:
      return;
  }
}

void HttpSession::handleClientEof() noexcept {
  io_.down_eof = true;
  client_.readStop();
  switch (state_) {
    case State::kIdle:
    case State::kHead:
    case State::kLingering:
      closeAll();
      return;
    case State::kConnecting:
    case State::kExchange:
      // The client went away (or half-closed, which HTTP/1.1 clients do not do while
      // waiting): abandon the exchange so the backend's slot frees up now, as nginx does
      // without proxy_ignore_client_abort.
      closeAll();
      return;
    case State::kTunnel:
      endTunnel(TunnelPhase::kClientEnded);
      return;
    case State::kH2:
    case State::kClosed:
      return;
  }
}

// ---- writing to the client ---------------------------------------------------------------

int HttpSession::writeDown(const char* p, size_t n) noexcept {
  uv_buf_t b = uv_buf_init(const_cast<char*>(p), static_cast<unsigned>(n));
  return writeDownBufs(&b, 1);
}

// Tries the write at once and queues only what the socket did not take: on a keep-alive
// exchange the response leaves in this one writev, with no write watcher armed.
int HttpSession::writeDownBufs(uv_buf_t* bufs, unsigned count) noexcept {
  size_t total = 0;
  for (unsigned i = 0; i < count; ++i) total += bufs[i].len;
  ex_->log.bytes_out += total;
  const ssize_t w = client_.write(&down_write_, bufs, count);
  if (w < 0) return static_cast<int>(w);
  if (static_cast<size_t>(w) == total) return 0;
  io_.down_writing = true;
  setUpReading(false);   // flow control: the pumps resume it once this write drains
  return 1;
}

void HttpSession::handleDownWrite(int status) noexcept {
  if (status < 0) {
    closeAll();
    return;
  }
  switch (state_) {
    case State::kExchange:
      pumpResponse();
      return;
    case State::kTunnel:
      if (tunnel_ == TunnelPhase::kBackendEnded)
        closeAll();   // the backend's last bytes reached the client
      else
        pumpTunnel();
      return;
    case State::kH2:          // the room hears the connection's writes
    case State::kLingering:   // the answer is out; the queued shutdown follows it
    case State::kIdle:        // no write is ever queued in these: an exchange ends only
    case State::kHead:        // once its writes have drained, and nothing is written
    case State::kConnecting:  // before a response byte
    case State::kClosed:
      return;
  }
}

// ---- errors, timeouts, closing -----------------------------------------------------------

void HttpSession::sendError(int status, HttpErrorReason reason) noexcept {
  if (state_ == State::kClosed || state_ == State::kLingering) return;
  lstats_->http_errors[static_cast<int>(reason)].add();
  // An answer before the request's first byte (408 from accept, 503 over the limit) has its
  // access-log line too.
  if (!acquireExchange()) {
    closeAll();
    return;
  }
  releaseUpstream(false);
  if (ex_->headSentToClient()) {   // the client already has a head: all lb can do is cut it
    closeAll();
    return;
  }
  state_ = State::kLingering;
  setDownReading(false);
  std::string_view msg = errorResponse(status);
  int w = io_.down_writing ? -1 : writeDown(msg.data(), msg.size());
  recordResponse(status, false);   // after the write: its line counts the answer's bytes
  if (w < 0) {
    closeAll();
    return;
  }
  lingerClose();
}

void HttpSession::lingerClose() noexcept {
  state_ = State::kLingering;
  releaseUpstream(false);
  releaseExchange();   // recorded: nothing of the request is read again
  releaseBlock(&in_);  // what the client still sends is read and dropped by the connection
  if (io_.down_eof) {
    closeAll();
    return;
  }
  // A shutdown that cannot start (the client is gone) still lingers, as it always has: the
  // read that sees the reset ends it.
  timer_due_ = 0;   // the connection's own from here
  client_.lingerClose(kLingerMs);
}

void HttpSession::handleTimer() noexcept {
  timer_due_ = 0;   // it fired
  uint64_t now = uv_now(worker_->loop());
  if (now < deadline_) {   // activity since the timer was set: wait out the rest
    client_.startTimer(deadline_ - now);
    timer_due_ = deadline_;
    return;
  }
  switch (state_) {
    case State::kIdle:
      if (worker_->draining()) {
        lingerClose();   // the drain's grace is over (drain())
        return;
      }
      closeAll();   // keep-alive idle: quietly
      return;
    case State::kHead:
      if (worker_->draining() && quietForDrain()) {
        lingerClose();
        return;
      }
      // A request has begun (or a new connection owes its first one) and its head did not
      // complete in time: 408, as slowloris deserves.
      sendError(408, HttpErrorReason::kHeaderTimeout);
      return;
    case State::kConnecting:
      upstreamFailed(true);
      return;
    case State::kExchange:
      if (ex_->headSentToClient()) {
        closeAll();
      } else {
        // The backend's fault only if it had the whole request (a client that stalls in
        // its body times out the same way).
        if (ex_->request == RequestPhase::kDone)
          attempt_.reportFailure(BackendFailure::kResponseTimeout);
        sendError(504, HttpErrorReason::kBackendTimeout);
      }
      return;
    case State::kTunnel:
    case State::kLingering:
      closeAll();
      return;
    case State::kH2:
    case State::kClosed:
      return;
  }
}

void HttpSession::armTimer(uint64_t ms) noexcept {
  if (state_ == State::kClosed) return;
  deadline_ = uv_now(worker_->loop()) + ms;
  if (timer_due_ != 0 && timer_due_ <= deadline_) return;   // it fires by then: handleTimer
  client_.startTimer(ms);
  timer_due_ = deadline_;
}

void HttpSession::touch(uint64_t ms) noexcept { deadline_ = uv_now(worker_->loop()) + ms; }

void HttpSession::releaseBlock(Block* b) noexcept {
  worker_->buffers().put(b->buf);
  b->buf = nullptr;
  b->len = b->pos = 0;
}

bool HttpSession::acquireExchange() noexcept {
  if (ex_ != nullptr) return true;
  if (exchanges_ == nullptr) exchanges_ = HttpExchangePool::of(*worker_);
  ex_ = exchanges_ != nullptr ? exchanges_->exchanges().get() : nullptr;
  if (ex_ == nullptr) return false;
  ex_->reset();
  ex_->req.reset();
  return true;
}

// Callers make sure nothing reads ex_ afterwards: every handler checks state_ before ex_,
// and the states that release it (kIdle, kLingering, kClosed) never read it.
void HttpSession::releaseExchange() noexcept {
  if (ex_ == nullptr) return;
  exchanges_->exchanges().put(ex_);   // set: ex_ came from it
  ex_ = nullptr;
}

void HttpSession::abort() noexcept {
  if (state_ == State::kH2)
    h2_->abort();
  else
    closeAll();
}

bool HttpSession::quietForDrain() const noexcept {
  const bool nothing_yet = in_.len == 0 && (ex_ == nullptr || !ex_->req.started());
  return state_ == State::kIdle || (state_ == State::kHead && nothing_yet);
}

void HttpSession::drain() noexcept {
  // A busy connection needs nothing: its response carries Connection: close
  // (worker_->draining() is read when its head is written). An idle one, between requests or
  // new and silent, may have a request on the wire already (a keep-alive client sends the
  // next as soon as it has read the last answer): closing now would lose it. It stays open
  // for kDrainGraceMs, a request that comes meanwhile is answered with Connection: close, and
  // one still quiet then gets a lingering close (FIN, never a reset). nginx closes idle
  // keep-alive connections at once on a graceful stop, and its clients see that race.
  // A connection idle for the grace already (armTimer(idle) stamped when it went idle) has no
  // request on its way more than any other moment: it closes now.
  if (state_ == State::kH2) {
    h2_->drain();
    return;
  }
  if (!quietForDrain()) return;
  const uint64_t idle = static_cast<uint64_t>(lst_->config->timeouts.idle.count());
  const uint64_t grace = std::min(kDrainGraceMs, idle);
  const uint64_t now = uv_now(worker_->loop());
  const uint64_t quiet = state_ == State::kIdle && deadline_ >= idle && now + idle >= deadline_
                             ? now + idle - deadline_
                             : 0;
  if (quiet >= grace) {
    lingerClose();
    return;
  }
  armTimer(grace - quiet);
}

void HttpSession::closeAll() noexcept {
  if (state_ == State::kClosed || state_ == State::kH2) return;
  state_ = State::kClosed;
  releaseUpstream(false);   // stops a body pump first
  client_.close();
  worker_->unlink(this);
  lstats_->connections_active.add(-1);
}


}  // namespace lb
