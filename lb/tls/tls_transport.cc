#include "lb/tls/tls_transport.h"

#include <openssl/err.h>

#include <cstring>

#include "lb/core/address.h"
#include "lb/core/log.h"

namespace lb {
namespace {

// One socket read's worth of ciphertext: copied into the read BIO at once, so one buffer per
// thread serves every connection (an idle TLS connection holds no read buffer).
constexpr size_t kReadSize = 32 * 1024;
thread_local char read_scratch[kReadSize];
// Ciphertext on its way to uv_try_write, the same way.
constexpr size_t kWriteScratch = 64 * 1024;
thread_local char write_scratch[kWriteScratch];
// An owner's small buffers (a response head and its body, say) are gathered here into one
// SSL_write, so they leave as one TLS record instead of one record each: one AEAD seal, one
// record header and tag, and fewer bytes on the wire. 16 KiB is TLS's largest record.
constexpr size_t kGather = 16 * 1024;
thread_local char gather_scratch[kGather];
// A recycled chunk larger than this gives its memory back (one large response must not pin
// its ciphertext's size on an idle connection).
constexpr size_t kKeepChunkBytes = 64 * 1024;

constexpr char kPlainHttpReply[] =
    "HTTP/1.1 400 Bad Request\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 46\r\n"
    "Connection: close\r\n"
    "\r\n"
    "The plain HTTP request was sent to HTTPS port\n";

// A TLS record of type handshake (22) starts every ClientHello (RFC 8446 5.1).
constexpr unsigned char kHandshakeRecord = 0x16;

// What a memory BIO's buffer can hold: it keeps the capacity of the largest burst written into
// it, drained or not.
size_t bioCapacity(BIO* b) {
  BUF_MEM* m = nullptr;
  BIO_get_mem_ptr(b, &m);
  return m == nullptr ? 0 : m->max;
}

Connection& connectionOf(uv_write_t* req) {
  return *static_cast<Connection*>(req->handle->data);
}

}  // namespace

// Both memory BIOs under `ssl`; null (and `ssl` freed) when one cannot be had.
SSL* TlsTransport::withMemoryBios(SSL* ssl) noexcept {
  if (ssl == nullptr) return nullptr;
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  if (rbio == nullptr || wbio == nullptr) {
    BIO_free(rbio);
    BIO_free(wbio);
    SSL_free(ssl);
    return nullptr;
  }
  // An empty read BIO means "wait for more", not EOF.
  BIO_set_mem_eof_return(rbio, -1);
  SSL_set_bio(ssl, rbio, wbio);
  return ssl;
}

TlsTransport* TlsTransport::accept(std::shared_ptr<const TlsServerContext> context,
                                   std::shared_ptr<TlsWorkerStats> stats, bool http) noexcept {
  SSL* ssl = withMemoryBios(SSL_new(context->initial()));
  if (ssl == nullptr) return nullptr;
  SSL_set_accept_state(ssl);
  auto* t = new (std::nothrow) TlsTransport(std::move(stats), http, ssl);
  if (t == nullptr) {
    SSL_free(ssl);
    return nullptr;
  }
  t->context_ = std::move(context);
  t->started_ = true;   // the client's first bytes may come in the accept's loop turn
  return t;
}

TlsTransport* TlsTransport::connect(std::shared_ptr<const TlsClientContext> context,
                                    std::shared_ptr<TlsWorkerStats> stats, unsigned worker,
                                    const sockaddr* peer) noexcept {
  SSL* ssl = withMemoryBios(context->newConnection(worker, peer));
  if (ssl == nullptr) return nullptr;
  SSL_set_connect_state(ssl);
  auto* t = new (std::nothrow) TlsTransport(std::move(stats), false, ssl);
  if (t == nullptr) {
    SSL_free(ssl);
    return nullptr;
  }
  t->client_ = std::move(context);
  t->sniffed_ = true;   // the backend's first bytes are its ServerHello, never sniffed
  return t;
}

TlsTransport::TlsTransport(std::shared_ptr<TlsWorkerStats> stats, bool http, SSL* ssl) noexcept
    : stats_(std::move(stats)),
      ssl_(ssl),
      rbio_(SSL_get_rbio(ssl)),
      wbio_(SSL_get_wbio(ssl)),
      http_(http) {}

int TlsTransport::startHandshake(Connection& c) noexcept {
  started_ = true;
  handshake(c);   // the ClientHello; a failure already reached Connection::handshakeDone
  return 0;
}

TlsTransport::~TlsTransport() {
  SSL_free(ssl_);
  while (free_ != nullptr) {
    Chunk* next = free_->next;
    delete free_;
    free_ = next;
  }
}

void TlsTransport::release(Connection&) noexcept {
  // Accept side: a handshake that never ended was cut short by lb's own timeout, or the
  // client left. Connect side: every end was counted where it happened (fail(), from a read,
  // a write or handshakeTimedOut); one still open here was abandoned by its owner, which is
  // no failure of the backend's. A connect that never reached TCP never started one at all.
  if (client_ == nullptr && started_ && !established_ && !counted_) {
    const TlsErrorReason reason = peer_gone_ ? TlsErrorReason::kClosed : TlsErrorReason::kTimeout;
    stats_->errors[static_cast<int>(reason)].add();
  }
  delete this;
}

void TlsTransport::handshakeTimedOut(Connection& c) noexcept {
  if (!started_ || established_ || counted_) return;
  fail(c, TlsErrorReason::kTimeout, UV_ETIMEDOUT);   // counted, logged, the connect ended
}

void TlsTransport::closing(Connection&) noexcept {
  // Owner writes that waited for the handshake were never handed to libuv: they come back
  // cancelled here, as libuv's own come back cancelled from uv_close.
  std::vector<Pending> pending;
  pending.swap(pending_);
  pending_bytes_ = 0;
  for (auto& p : pending) owner_cb_(p.req, UV_ECANCELED);
  if (pending_shutdown_ != nullptr) {
    uv_shutdown_t* req = pending_shutdown_;
    pending_shutdown_ = nullptr;
    pending_shutdown_cb_(req, UV_ECANCELED);
  }
}

// --- Chunks ------------------------------------------------------------------------------

TlsTransport::Chunk* TlsTransport::takeChunk() noexcept {
  Chunk* c = free_;
  if (c != nullptr) {
    free_ = c->next;
  } else {
    c = new (std::nothrow) Chunk();
    if (c == nullptr) return nullptr;
  }
  c->self = this;
  c->req.data = c;
  c->owner = nullptr;
  c->eof_after = false;
  c->next = nullptr;
  return c;
}

void TlsTransport::putChunk(Chunk* c) noexcept {
  if (c->data.capacity() > kKeepChunkBytes)
    std::string().swap(c->data);
  else
    c->data.clear();
  c->next = free_;
  free_ = c;
}

void TlsTransport::onChunkWritten(uv_write_t* req, int status) {
  auto* chunk = static_cast<Chunk*>(req->data);
  chunk->self->chunkWritten(chunk, status);
}

void TlsTransport::chunkWritten(Chunk* chunk, int status) noexcept {
  Connection& c = connectionOf(&chunk->req);
  --chunks_out_;
  uv_write_t* owner = chunk->owner;
  const bool eof = chunk->eof_after;
  putChunk(chunk);
  if (owner != nullptr) owner_cb_(owner, status);
  if (eof && !c.closing()) {
    uv_buf_t none = uv_buf_init(nullptr, 0);
    c.deliver(UV_EOF, &none);
  }
}

int TlsTransport::flush(Connection& c, uv_write_t* owner, bool try_first) noexcept {
  size_t left = BIO_ctrl_pending(wbio_);
  if (left == 0 && owner == nullptr) return 0;
  size_t partial = 0;      // bytes of write_scratch still to send
  size_t partial_at = 0;
  if (owner == nullptr && try_first) {
    while (left > 0) {
      const int got = BIO_read(wbio_, write_scratch, static_cast<int>(std::min(left, kWriteScratch)));
      if (got <= 0) break;
      left -= static_cast<size_t>(got);
      uv_buf_t b = uv_buf_init(write_scratch, static_cast<unsigned>(got));
      int sent = uv_try_write(c.stream(), &b, 1);
      if (sent == UV_EAGAIN) sent = 0;
      if (sent < 0) return sent;
      if (sent < got) {
        partial = static_cast<size_t>(got - sent);
        partial_at = static_cast<size_t>(sent);
        break;
      }
    }
    if (partial == 0 && left == 0) {
      dropLargeWriteBio();
      return 0;
    }
  }
  Chunk* chunk = takeChunk();
  if (chunk == nullptr) return UV_ENOMEM;
  chunk->owner = owner;
  chunk->data.resize(partial + left);
  if (partial > 0) memcpy(chunk->data.data(), write_scratch + partial_at, partial);
  if (left > 0) BIO_read(wbio_, chunk->data.data() + partial, static_cast<int>(left));
  dropLargeWriteBio();
  uv_buf_t b = uv_buf_init(chunk->data.data(), static_cast<unsigned>(chunk->data.size()));
  const int rc = uv_write(&chunk->req, c.stream(), &b, 1, onChunkWritten);
  if (rc != 0) {
    putChunk(chunk);
    return rc;
  }
  ++chunks_out_;
  return 0;
}

void TlsTransport::dropLargeWriteBio() noexcept {
  // Drained, and it grew past what a chunk may keep (one large response's ciphertext): a
  // fresh BIO, so an idle connection does not hold that memory (the chunks' rule, putChunk).
  if (bioCapacity(wbio_) <= kKeepChunkBytes) return;
  BIO* fresh = BIO_new(BIO_s_mem());
  if (fresh == nullptr) return;   // keeps the large one; nothing is lost
  SSL_set0_wbio(ssl_, fresh);     // frees the old one
  wbio_ = fresh;
}

bool TlsTransport::sslWrite(const char* data, size_t len) noexcept {
  ERR_clear_error();
  size_t done = 0;
  // The write BIO grows as needed, so SSL_write takes every byte in one call.
  if (SSL_write_ex(ssl_, data, len, &done) != 1 || done != len) {
    LB_DEBUG("tls: write: %s", tlsErrorText().c_str());
    return false;
  }
  return true;
}

bool TlsTransport::encrypt(const uv_buf_t* bufs, unsigned n) noexcept {
  if (n == 1) return bufs[0].len == 0 || sslWrite(bufs[0].base, bufs[0].len);
  size_t gathered = 0;
  for (unsigned i = 0; i < n; ++i) {
    const size_t len = bufs[i].len;
    if (len == 0) continue;
    if (gathered + len <= kGather) {
      memcpy(gather_scratch + gathered, bufs[i].base, len);
      gathered += len;
      continue;
    }
    if (gathered > 0 && !sslWrite(gather_scratch, gathered)) return false;
    gathered = 0;
    if (len >= kGather) {   // a large buffer goes as it is, copied by nobody
      if (!sslWrite(bufs[i].base, len)) return false;
    } else {
      memcpy(gather_scratch, bufs[i].base, len);
      gathered = len;
    }
  }
  return gathered == 0 || sslWrite(gather_scratch, gathered);
}

// --- Writing -----------------------------------------------------------------------------

int TlsTransport::tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept {
  if (!established_) return UV_EAGAIN;   // queued until the handshake ends
  size_t total = 0;
  for (unsigned i = 0; i < n; ++i) total += bufs[i].len;
  if (!encrypt(bufs, n)) return UV_EPROTO;
  // Behind ciphertext already queued, nothing may jump the queue.
  const int rc = flush(c, nullptr, chunks_out_ == 0);
  if (rc < 0) return rc;
  return static_cast<int>(total);
}

int TlsTransport::queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                             uv_write_cb cb) noexcept {
  owner_cb_ = cb;
  if (!established_) {
    Pending p{req, {}};
    p.bufs.assign(bufs, bufs + n);
    for (unsigned i = 0; i < n; ++i) pending_bytes_ += bufs[i].len;
    pending_.push_back(std::move(p));
    return 0;
  }
  if (!encrypt(bufs, n)) return UV_EPROTO;
  return flush(c, req, false);
}

int TlsTransport::shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept {
  if (!established_) {
    if (!pending_.empty()) {
      pending_shutdown_ = req;
      pending_shutdown_cb_ = cb;
      return 0;
    }
    return uv_shutdown(req, c.stream(), cb);
  }
  ERR_clear_error();
  SSL_shutdown(ssl_);   // close_notify into the write BIO, ahead of the FIN
  flush(c, nullptr, chunks_out_ == 0);
  return uv_shutdown(req, c.stream(), cb);
}

size_t TlsTransport::queued(Connection& c) noexcept {
  return c.stream()->write_queue_size + pending_bytes_;
}

// --- Reading -----------------------------------------------------------------------------

void TlsTransport::allocRead(Connection& c, uv_buf_t* buf) noexcept {
  if (c.lingering()) {
    c.ownerBuffer(buf);   // dropped as it comes
    return;
  }
  *buf = uv_buf_init(read_scratch, sizeof read_scratch);
}

void TlsTransport::readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept {
  if (c.lingering()) {
    c.deliver(n, buf);
    return;
  }
  if (n == 0) return;
  if (n < 0) {
    if (!established_) peer_gone_ = true;
    if (!established_ && client_ != nullptr) {
      fail(c, TlsErrorReason::kClosed, static_cast<int>(n));
      return;
    }
    uv_buf_t none = uv_buf_init(nullptr, 0);
    c.deliver(n, &none);
    return;
  }
  if (!sniffed_) {
    sniffed_ = true;
    if (static_cast<unsigned char>(buf->base[0]) != kHandshakeRecord) {
      plaintext(c);
      return;
    }
  }
  if (BIO_write(rbio_, buf->base, static_cast<int>(n)) != n) {
    fail(c, TlsErrorReason::kProtocol, UV_ENOMEM);
    return;
  }
  if (!established_) {
    handshake(c);
    if (!established_ || c.closing()) return;
  }
  decrypt(c);
}

void TlsTransport::plaintext(Connection& c) noexcept {
  counted_ = true;
  stats_->errors[static_cast<int>(TlsErrorReason::kPlaintext)].add();
  c.readStop();
  if (http_) {
    Chunk* chunk = takeChunk();
    if (chunk != nullptr) {
      chunk->eof_after = true;
      chunk->data.assign(kPlainHttpReply, sizeof kPlainHttpReply - 1);
      uv_buf_t b = uv_buf_init(chunk->data.data(), static_cast<unsigned>(chunk->data.size()));
      if (uv_write(&chunk->req, c.stream(), &b, 1, onChunkWritten) == 0) {
        ++chunks_out_;
        return;   // the connection ends once the answer is out (chunkWritten)
      }
      putChunk(chunk);
    }
  }
  uv_buf_t none = uv_buf_init(nullptr, 0);
  c.deliver(UV_EPROTO, &none);
}

void TlsTransport::fail(Connection& c, TlsErrorReason reason, int status) noexcept {
  if (client_ != nullptr && !established_ && reason == TlsErrorReason::kProtocol &&
      SSL_get_verify_result(ssl_) != X509_V_OK)
    reason = TlsErrorReason::kVerify;
  if (!established_ && !counted_) {
    counted_ = true;
    stats_->errors[static_cast<int>(reason)].add();
  }
  flush(c, nullptr, chunks_out_ == 0);   // the alert, if the socket takes it now
  if (client_ != nullptr && !established_) {
    // The owner is still waiting for its connect: that is where a failed handshake goes.
    logFailure(c, reason);
    c.handshakeDone(status);
    return;
  }
  uv_buf_t none = uv_buf_init(nullptr, 0);
  c.deliver(status, &none);
}

void TlsTransport::logFailure(Connection& c, TlsErrorReason reason) noexcept {
  try {
    if (reason == TlsErrorReason::kVerify)
      failure_ = "certificate verify failed: " + tlsVerifyText(ssl_);
    else if (reason == TlsErrorReason::kClosed)
      failure_ = "the backend closed the connection";
    else if (reason == TlsErrorReason::kTimeout)
      failure_ = "no handshake within the connect timeout";
    else
      failure_ = last_error_.empty() ? "protocol error" : last_error_;
    if (client_->logsFailures() && client_->mayLog())
      LB_WARN("upstream TLS: %s, backend %s: handshake failed: %s", client_->label().c_str(),
              formatAddress(c.peer()).c_str(), failure_.c_str());
  } catch (...) {
  }
}

void TlsTransport::handshake(Connection& c) noexcept {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshakeDone(c);
    return;
  }
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    if (flush(c, nullptr, chunks_out_ == 0) < 0) fail(c, TlsErrorReason::kClosed, UV_EPIPE);
    return;
  }
  if (client_ != nullptr) {
    last_error_ = tlsErrorText();   // for the connect side's log line
  } else {
    LB_DEBUG("tls: handshake: %s", tlsErrorText().c_str());
  }
  ERR_clear_error();
  fail(c, TlsErrorReason::kProtocol, UV_EPROTO);
}

void TlsTransport::handshakeDone(Connection& c) noexcept {
  established_ = true;
  const int v = SSL_version(ssl_) == TLS1_3_VERSION ? static_cast<int>(TlsVersion::k13)
                                                    : static_cast<int>(TlsVersion::k12);
  stats_->handshakes[v][SSL_session_reused(ssl_) ? 1 : 0].add();
  // The server's last flight (and TLS 1.3's session tickets), then what the owner wrote
  // while it waited.
  if (flush(c, nullptr, chunks_out_ == 0) < 0) {
    fail(c, TlsErrorReason::kClosed, UV_EPIPE);
    return;
  }
  std::vector<Pending> pending;
  pending.swap(pending_);
  pending_bytes_ = 0;
  for (auto& p : pending) {
    const int rc = encrypt(p.bufs.data(), static_cast<unsigned>(p.bufs.size()))
                       ? flush(c, p.req, false)
                       : UV_EPROTO;
    if (rc != 0) owner_cb_(p.req, rc);
  }
  if (pending_shutdown_ != nullptr) {
    uv_shutdown_t* req = pending_shutdown_;
    pending_shutdown_ = nullptr;
    const int rc = shutdown(c, req, pending_shutdown_cb_);
    if (rc != 0) pending_shutdown_cb_(req, rc);
  }
  if (client_ != nullptr)
    c.handshakeDone(0);   // the owner's connect has succeeded
  else
    c.established();      // before decrypt() hands it any plaintext
}

void TlsTransport::readResumed(Connection& c) noexcept {
  if (!established_ || in_decrypt_ || c.closing()) return;
  if (SSL_pending(ssl_) > 0 || BIO_ctrl_pending(rbio_) > 0) decrypt(c);
}

void TlsTransport::decrypt(Connection& c) noexcept {
  in_decrypt_ = true;
  while (!c.closing() && c.reading()) {
    // Nothing buffered, in OpenSSL or the read BIO: an SSL_read now could only say "want
    // read", after taking and releasing a record buffer (SSL_MODE_RELEASE_BUFFERS). What
    // the last one left to send (a key update's answer) goes out first.
    if (SSL_has_pending(ssl_) == 0 && BIO_ctrl_pending(rbio_) == 0) {
      if (BIO_ctrl_pending(wbio_) > 0) flush(c, nullptr, chunks_out_ == 0);
      break;
    }
    uv_buf_t b;
    c.ownerBuffer(&b);
    if (b.base == nullptr || b.len == 0) {
      c.deliver(UV_ENOBUFS, &b);
      break;
    }
    ERR_clear_error();
    size_t got = 0;
    const int r = SSL_read_ex(ssl_, b.base, b.len, &got);
    if (r == 1) {
      c.deliver(static_cast<ssize_t>(got), &b);
      continue;
    }
    const int e = SSL_get_error(ssl_, r);
    c.deliver(0, &b);   // the buffer goes back unused
    if (c.closing()) break;
    if (e == SSL_ERROR_WANT_READ) {
      flush(c, nullptr, chunks_out_ == 0);   // a key update's answer, an alert
      break;
    }
    uv_buf_t none = uv_buf_init(nullptr, 0);
    if (e == SSL_ERROR_ZERO_RETURN) {
      c.deliver(UV_EOF, &none);   // close_notify
    } else {
      // The connect side's owner may say why the peer ended it after the handshake (a server
      // that wanted a client certificate alerts only then, under TLS 1.3).
      if (client_ != nullptr) {
        try {
          failure_ = tlsErrorText();
        } catch (...) {
        }
        LB_DEBUG("tls: read: %s", failure_.c_str());
      } else {
        LB_DEBUG("tls: read: %s", tlsErrorText().c_str());
      }
      ERR_clear_error();
      c.deliver(UV_EPROTO, &none);
    }
    break;
  }
  in_decrypt_ = false;
}

std::string_view TlsTransport::protocol() const noexcept {
  const unsigned char* p = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return p == nullptr ? std::string_view{} : std::string_view(reinterpret_cast<const char*>(p), len);
}

}  // namespace lb
