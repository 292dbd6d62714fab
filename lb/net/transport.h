// What sits between a Connection and its socket: how bytes read from the wire become the
// bytes the owner sees, and how the owner's bytes reach the wire. Plain TCP (the only one
// today) passes both through; the seam exists so that a TLS transport can go under every
// session without any session changing (docs/architecture.md, "Connections"):
//
//   - TLS (OpenSSL with memory BIOs): allocRead hands libuv the transport's own ciphertext
//     buffer; readDone BIO_write()s what arrived into the read BIO and SSL_read()s the
//     plaintext into buffers it takes from Connection::ownerBuffer, delivering each with
//     Connection::deliver (a handshake or a record not yet whole delivers nothing);
//     tryWrite/queueWrite SSL_write() the owner's plaintext into the write BIO and put the
//     ciphertext on the socket, reporting the owner's plaintext bytes as written; queued
//     counts the ciphertext not yet on the socket (record framing adds a few percent, which
//     the watermarks can ignore);
//     shutdown sends close_notify before the socket's FIN.
//   - A splice(2) body pump needs no transport: it moves bytes socket to socket through a
//     pipe while both connections' libuv reads are stopped (Connection::readStop), waiting
//     for readiness on uv_poll_t handles over dup()ed descriptors (epoll keys on the
//     descriptor, so the dups do not collide with libuv's own registration). It applies
//     only where both transports are plain (Connection::plain()).
//
// The plain transport is a single static instance, so a plain connection costs no
// allocation; a TLS transport is one object per connection (lb/tls/tls_transport.h), made at
// accept and freed by release() once the connection's last libuv callback has come back.
// All functions run on the loop thread and are noexcept: they run inside libuv callbacks.
#pragma once

#include <uv.h>

#include <string_view>

#include <cstddef>

namespace lb {

class Connection;

class Transport {
 public:
  // Where libuv's next read of the socket lands.
  virtual void allocRead(Connection& c, uv_buf_t* buf) noexcept = 0;
  // What libuv read into it (n < 0: EOF or an error), for the transport to pass up through
  // Connection::deliver.
  virtual void readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept = 0;
  // As much of [bufs, n) as the socket takes now: bytes taken, UV_EAGAIN, or < 0.
  virtual int tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept = 0;
  // Queues [bufs, n) behind every earlier write; `cb` follows. 0 or < 0.
  virtual int queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                         uv_write_cb cb) noexcept = 0;
  // The write side ends after every queued write; `cb` follows. 0 or < 0.
  virtual int shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept = 0;
  // Bytes accepted by queueWrite and not yet on the socket: what the watermarks compare.
  virtual size_t queued(Connection& c) noexcept = 0;
  // The owner started reading again: bytes the transport already holds (plaintext decrypted
  // past where the owner stopped) go up now.
  virtual void readResumed(Connection& c) noexcept { (void)c; }
  // Connection::close() has closed the handles: writes the transport still holds (not yet
  // handed to libuv) come back now, cancelled.
  virtual void closing(Connection& c) noexcept { (void)c; }
  // The connection's last callback has come back (just before the owner's onClosed).
  virtual void release(Connection& c) noexcept { (void)c; }
  // Connect side: whether the transport has its own opening (TLS's handshake) between the
  // TCP connect and the owner's onConnected. Connection::connect() asks once the TCP
  // connect succeeded, starts reading, and calls startHandshake; the transport ends it with
  // Connection::handshakeDone (0, or < 0), within the same connect timeout.
  virtual bool handshakes() const noexcept { return false; }
  // 0: started (handshakeDone follows), < 0: could not start.
  virtual int startHandshake(Connection& c) noexcept {
    (void)c;
    return 0;
  }
  // Connect side: the connect's deadline passed with the handshake still going. The
  // transport counts and logs the timeout and ends the connect (Connection::handshakeDone
  // with UV_ETIMEDOUT). A handshake the owner closes before any end is the owner's to
  // abandon (its client left): no failure of the backend's, counted nowhere.
  virtual void handshakeTimedOut(Connection& c) noexcept { (void)c; }
  // Accept side: whether the transport's opening (TLS's handshake) is over. Until it is,
  // nothing reaches the owner; the moment it ends the transport calls
  // Connection::established(), which tells the owner (ConnectionOwner::onEstablished).
  virtual bool established() const noexcept { return true; }
  // Accept side, once established: the application protocol the handshake agreed on (TLS's
  // ALPN, "h2" or "http/1.1"), empty when none was (always, for a plain connection).
  virtual std::string_view protocol() const noexcept { return {}; }

 protected:
  ~Transport() = default;
};

// Bytes through as they are. The one instance every connection starts with.
class PlainTransport final : public Transport {
 public:
  constexpr PlainTransport() noexcept = default;
  // The one instance (below), constant-initialized: no guard on the way to it, so that
  // Connection::plain() is one pointer compare on the request path.
  static PlainTransport& instance() noexcept;

  void allocRead(Connection& c, uv_buf_t* buf) noexcept override;
  void readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept override;
  int tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept override;
  int queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                 uv_write_cb cb) noexcept override;
  int shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept override;
  // libuv's own count, exact to the byte (uv_write sends what it can at once), so a write
  // the socket takes whole never counts against the watermarks.
  size_t queued(Connection& c) noexcept override;
};

inline constinit PlainTransport plain_transport_instance;
inline PlainTransport& PlainTransport::instance() noexcept { return plain_transport_instance; }

}  // namespace lb
