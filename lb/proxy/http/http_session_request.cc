// HttpSession's requests: the head parsed in place (kHead), what it says and the key it
// yields, the body streamed up (RequestPhase kBody), and the move to the next request on a
// keep-alive connection.
#include <algorithm>
#include <cstring>

#include "lb/core/log.h"
#include "lb/http/rewrite.h"
#include "lb/proxy/http/http_session.h"
#include "plugins/keys/key_chain.h"

namespace lb {

// kHead: parse what has arrived; a complete head moves on to routing, anything else waits or
// is answered with an error.
void HttpSession::processHead() noexcept {
  if (in_.len == in_.pos) return;
  size_t consumed = 0;
  auto r = ex_->req.feed(in_.buf, in_.buf + in_.pos, in_.len - in_.pos, &consumed);
  const uint32_t max_head =
      std::min<uint32_t>(lst_->config->limits.max_header_bytes, BufferPool::kBlockSize);
  // Over the limit: 414 while the request-target is what does not fit (RFC 9112 §3), else 431.
  auto tooLarge = [&] {
    const ParsedHead& h = ex_->req.head();
    bool uri = !ex_->req.urlComplete() || h.url.off + h.url.len > max_head;
    sendError(uri ? 414 : 431, HttpErrorReason::kHeaderTooLarge);
  };
  switch (r) {
    case HttpParser::Result::kNeedMore:
      in_.pos = in_.len;
      if (in_.len >= max_head) tooLarge();
      return;
    case HttpParser::Result::kHeadComplete:
      in_.pos += static_cast<uint32_t>(consumed);
      head_end_ = in_.pos;
      if (head_end_ > max_head) {
        tooLarge();
        return;
      }
      onRequestHead();
      return;
    case HttpParser::Result::kMessageComplete:   // cannot happen before a head
    case HttpParser::Result::kError:
      LB_DEBUG("http: refused request: %s", ex_->req.errorReason());
      switch (ex_->req.error()) {
        case HttpParser::Error::kTooManyHeaders:
          sendError(431, HttpErrorReason::kHeaderTooLarge);
          return;
        case HttpParser::Error::kBodyTooLarge:
          sendError(413, HttpErrorReason::kBodyTooLarge);
          return;
        case HttpParser::Error::kVersion:
          sendError(505, HttpErrorReason::kMalformed);
          return;
        default:
          sendError(400, HttpErrorReason::kMalformed);
          return;
      }
  }
}

// The head is complete (the parser is paused after it): check what llhttp leaves to us, note
// what the rest of the exchange needs, derive the key and go pick a backend.
//
// Reading from the client stays on: what arrives meanwhile (body, the next pipelined request,
// EOF) waits in the block and is handled by handleDownRead per state. Switching read interest
// off and on around every exchange cost two epoll_ctl calls per request.
void HttpSession::onRequestHead() noexcept {
  // The head is whole: route it by the membership current now, not when the connection's
  // last exchange ended (a removed listener serves this one last request by the old one).
  followSnapshot();
  ex_->log.start_ns = uv_hrtime();
  const ParsedHead& h = ex_->req.head();
  const char* base = in_.buf;
  {
    std::string_view m = h.method.in(base), u = h.url.in(base);
    ex_->log.method_len = static_cast<uint8_t>(std::min(m.size(), sizeof ex_->log.method));
    memcpy(ex_->log.method, m.data(), ex_->log.method_len);
    ex_->log.path_len = static_cast<uint16_t>(std::min(u.size(), sizeof ex_->log.path));
    memcpy(ex_->log.path, u.data(), ex_->log.path_len);
    ex_->log.bytes_in = head_end_;
  }
  // The parser has judged the head (Host, target, framing: lb/http/parser.h); a proxy in
  // front of caches does not tunnel CONNECT.
  if (ex_->req.method() == HTTP_CONNECT) {
    sendError(400, HttpErrorReason::kMalformed);
    return;
  }
  RequestFacts& f = ex_->facts;
  f.head_method = ex_->req.method() == HTTP_HEAD;
  f.http10 = h.http_major == 1 && h.http_minor == 0;
  f.upgrade = ex_->req.upgrade();
  f.keep_alive = ex_->req.keepAlive();
  f.retryable = isIdempotentMethod(ex_->req.method()) && !ex_->req.hasBody();
  if (!deriveKey()) {
    sendError(400, HttpErrorReason::kMissingKey);
    return;
  }
  if (ex_->route.source == KeySource::kKey) {
    // A hot key's GET and HEAD may go to any of its first hot_keys.spread hosts: an HTTP
    // cache fills a copy from the origin on its own. Any other method keeps the owner, so
    // that writes, purges and the like reach the one host that owns the key.
    const auto m = ex_->req.method();
    const uint32_t spread = m == HTTP_GET || m == HTTP_HEAD
                                ? cluster_->spreadFor(worker_->index(), ex_->route.hash)
                                : 0;
    attempt_.begin(*worker_, *lst_, *cluster_, ex_->route.hash, spread);
  } else {   // random or round_robin: the runtime routes it (lb/runtime/backend_attempt.h)
    attempt_.beginKeyless(*worker_, *lst_, *cluster_);
  }
  if (!attempt_.pickFirst()) {   // no backend, or every one down
    sendError(503, HttpErrorReason::kNoBackend);
    return;
  }
  connectUpstream(Pooling::kReuseIdle);
}

// Fills ex_->route's source (and hash, for a key) from the head viewed in place.
// False when the request has no key and the listener rejects such requests.
bool HttpSession::deriveKey() noexcept {
  Route& r = ex_->route;
  if (lst_->keys != nullptr) {
    HttpRequestView view = requestView(ex_->req.head(), in_.buf, ex_->view_headers);
    KeyContext ctx;
    ctx.peer = client_.peer();
    ctx.local = client_.local();
    ctx.request = &view;
    ctx.cookie_out = &ex_->cookie;
    KeyText text;
    ctx.text_out = &text;
    if (lst_->keys->compute(ctx, cluster_->selector->key_hash, &r.hash)) {
      r.source = KeySource::kKey;
      cluster_->countKey(worker_->index(), r.hash, text.bytes);
      return true;
    }
  }
  switch (lst_->config->on_missing_key) {
    case OnMissingKey::kReject:
      return false;
    case OnMissingKey::kRandom:
      r.source = KeySource::kRandom;
      return true;
    case OnMissingKey::kRoundRobin:
      r.source = KeySource::kRoundRobin;
      return true;
  }
  return false;
}

// RequestPhase kBody: passes the body's bytes up as they arrive, with their own framing, one
// write at a time (a queued write stops reading from the client until handleUpWrite). At
// the end of the request, kDone: reading goes on only to see the client leave.
void HttpSession::pumpRequest() noexcept {
  while (state_ == State::kExchange && ex_->request == RequestPhase::kBody && up_ != nullptr &&
         !up_->writing()) {
    size_t consumed = 0;
    auto r = ex_->req.feed(in_.buf, in_.buf + in_.pos, in_.len - in_.pos, &consumed);
    if (r == HttpParser::Result::kError) {
      // Bad framing mid-body: nothing more may reach the backend.
      releaseUpstream(false);
      if (!ex_->headSentToClient())
        sendError(ex_->req.error() == HttpParser::Error::kBodyTooLarge ? 413 : 400,
                  ex_->req.error() == HttpParser::Error::kBodyTooLarge
                      ? HttpErrorReason::kBodyTooLarge
                      : HttpErrorReason::kMalformed);
      else
        closeAll();
      return;
    }
    const char* chunk = in_.buf + in_.pos;
    in_.pos += static_cast<uint32_t>(consumed);
    if (r == HttpParser::Result::kMessageComplete) ex_->request = RequestPhase::kDone;
    if (consumed > 0) {
      ex_->route.stats->bytes_tx.add(consumed);
      ex_->log.bytes_in += consumed;
      int w = up_->write(chunk, consumed);
      if (w < 0) {
        upstreamFailed(false);
        return;
      }
      if (w == 1) {
        setDownReading(false);
        return;   // handleUpWrite resumes
      }
    }
    if (ex_->request == RequestPhase::kDone) break;
    if (r == HttpParser::Result::kNeedMore) {
      // Everything buffered went out: the head is no longer needed, reuse the block.
      in_.len = in_.pos = 0;
      head_end_ = 0;
      if (spliceRequestBody()) return;   // onPumpDone carries on
      setDownReading(true);
      return;
    }
  }
  if (state_ == State::kExchange && ex_->request == RequestPhase::kDone) {
    // Keep reading, to notice a client that leaves while the backend works (handleDownRead
    // queues pipelined bytes without parsing them).
    setDownReading(in_.len < BufferPool::kBlockSize);
    if (ex_->response == ResponsePhase::kDone && !io_.down_writing) finishExchange();
  }
}

// followSnapshot's move, when the worker has a snapshot newer than the connection's.
bool HttpSession::moveToSnapshot() noexcept {
  const auto& current = worker_->snapshot();
  const ListenerSnapshot* ls = current->findListener(lst_->config->name);
  if (ls == nullptr) return false;
  snap_ = current;
  lst_ = ls;
  cluster_ = &snap_->clusters[ls->cluster];
  lstats_ = &ls->state->per_worker[worker_->index()];
  return true;
}

// After a complete exchange with keep-alive: kIdle, or kHead at once when the next request's
// bytes are already here.
void HttpSession::nextRequest() noexcept {
  // Pipelined bytes move to the front: the next head is parsed from offset 0.
  if (in_.buf != nullptr) {
    uint32_t rest = in_.len - in_.pos;
    if (rest > 0 && in_.pos > 0) memmove(in_.buf, in_.buf + in_.pos, rest);
    in_.len = rest;
    in_.pos = 0;
    if (rest == 0) releaseBlock(&in_);
  }
  head_end_ = 0;
  // An idle connection whose listener a reload removed has nothing more to serve.
  if (!followSnapshot()) {
    closeAll();
    return;
  }
  if (worker_->draining() && in_.len == 0) {
    closeAll();
    return;
  }
  if (in_.len > 0) {
    // The exchange stays for the pipelined request; an idle connection gives it back
    // instead, and acquireExchange resets it when the next request's first byte comes.
    ex_->req.reset();
    ex_->reset();
    state_ = State::kHead;
    armTimer(lst_->config->timeouts.header.count());
    processHead();
  } else {
    state_ = State::kIdle;
    releaseExchange();   // an idle connection holds only the session (and no block either)
    armTimer(lst_->config->timeouts.idle.count());
  }
  if (state_ == State::kIdle || state_ == State::kHead) setDownReading(true);
}

}  // namespace lb
