// TLS under a Connection (lb/net/transport.h): OpenSSL driven through two memory BIOs on the
// worker's loop, so no OpenSSL call ever touches the socket or blocks. Ciphertext read from
// the socket goes into the read BIO; the handshake runs until done (the owner hears nothing
// meanwhile, and its writes wait); then SSL_read decrypts into the owner's buffers. The
// owner's plaintext is SSL_write()n into the write BIO, whose ciphertext goes to the socket
// at once (uv_try_write) or in a chunk this transport owns and recycles, the owner's write
// completing when its chunk is on the socket.
//
// Towards a backend (connect side) the same transport is the client: Connection::connect()
// starts its handshake once TCP is up, and the owner's onConnected waits for it.
//
// First bytes that are not a TLS handshake record are plaintext: an http listener answers
// 400 ("The plain HTTP request was sent to HTTPS port", as nginx does) and closes; other
// protocols close. Every failed handshake is counted by reason (lb_tls_handshake_errors_total)
// and each finished one by version and resumption (lb_tls_handshakes_total).
// Loop thread only; every member is noexcept (they run inside libuv callbacks).
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <vector>

#include "lb/core/stats.h"
#include "lb/net/connection.h"
#include "lb/tls/tls_client_context.h"
#include "lb/tls/tls_context.h"

namespace lb {

class TlsTransport final : public Transport {
 public:
  // Accept side. `http`: plaintext gets the 400 answer. Null when OpenSSL cannot allocate.
  static TlsTransport* accept(std::shared_ptr<const TlsServerContext> context,
                              std::shared_ptr<TlsWorkerStats> stats, bool http) noexcept;
  // Connect side, for Connection::connect(): the handshake with the backend at `peer` starts
  // once TCP is up, on the loop of `worker` (its session slot in `context`), and ends in
  // Connection::handshakeDone. A failed one is counted (a certificate that does not verify
  // as kVerify) and logged, at most a line a second per context; one its owner abandons
  // (closes before it ended: the client left) is neither. Null when OpenSSL cannot
  // allocate.
  static TlsTransport* connect(std::shared_ptr<const TlsClientContext> context,
                               std::shared_ptr<TlsWorkerStats> stats, unsigned worker,
                               const sockaddr* peer) noexcept;

  void allocRead(Connection& c, uv_buf_t* buf) noexcept override;
  void readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept override;
  int tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept override;
  int queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                 uv_write_cb cb) noexcept override;
  int shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept override;
  size_t queued(Connection& c) noexcept override;
  void readResumed(Connection& c) noexcept override;
  void closing(Connection& c) noexcept override;
  void release(Connection& c) noexcept override;
  bool handshakes() const noexcept override { return client_ != nullptr; }
  bool established() const noexcept override { return established_; }
  std::string_view protocol() const noexcept override;
  // Connect side: why the handshake failed ("certificate verify failed: ..."), once it has;
  // after it, OpenSSL's reason for a read that failed (an alert from the peer).
  const std::string& failureText() const noexcept { return failure_; }
  int startHandshake(Connection& c) noexcept override;
  void handshakeTimedOut(Connection& c) noexcept override;

 private:
  // Ciphertext on its way to the socket, with the owner's write it completes (if any).
  struct Chunk {
    uv_write_t req;
    TlsTransport* self = nullptr;
    uv_write_t* owner = nullptr;
    bool eof_after = false;   // the plaintext 400: the connection ends once it is out
    std::string data;
    Chunk* next = nullptr;
  };
  // An owner write queued before the handshake ended.
  struct Pending {
    uv_write_t* req;
    std::vector<uv_buf_t> bufs;
  };

  TlsTransport(std::shared_ptr<TlsWorkerStats> stats, bool http, SSL* ssl) noexcept;
  static SSL* withMemoryBios(SSL* ssl) noexcept;
  ~TlsTransport();

  static void onChunkWritten(uv_write_t* req, int status);
  void chunkWritten(Chunk* chunk, int status) noexcept;
  Chunk* takeChunk() noexcept;
  void putChunk(Chunk* chunk) noexcept;
  // The write BIO to the socket: as much now as it takes, the rest in a chunk completing
  // `owner` (which, when set, always gets its chunk, even an empty one). 0 or < 0.
  int flush(Connection& c, uv_write_t* owner, bool try_first) noexcept;
  // SSL_write()s the whole of [bufs, n), small buffers gathered into one record. false on an
  // OpenSSL error.
  bool encrypt(const uv_buf_t* bufs, unsigned n) noexcept;
  bool sslWrite(const char* data, size_t len) noexcept;
  // After a flush has drained the write BIO: gives back a buffer that grew large.
  void dropLargeWriteBio() noexcept;
  void handshake(Connection& c) noexcept;
  void handshakeDone(Connection& c) noexcept;
  void decrypt(Connection& c) noexcept;
  void fail(Connection& c, TlsErrorReason reason, int status) noexcept;
  void plaintext(Connection& c) noexcept;
  // Connect side: the line a failed handshake logs.
  void logFailure(Connection& c, TlsErrorReason reason) noexcept;

  std::shared_ptr<const TlsServerContext> context_;
  std::shared_ptr<const TlsClientContext> client_;   // set on the connect side only
  std::shared_ptr<TlsWorkerStats> stats_;
  SSL* ssl_;
  BIO* rbio_;   // owned by ssl_
  BIO* wbio_;
  uv_write_cb owner_cb_ = nullptr;   // Connection's write callback (the same for every write)
  std::vector<Pending> pending_;
  size_t pending_bytes_ = 0;
  uv_shutdown_t* pending_shutdown_ = nullptr;
  uv_shutdown_cb pending_shutdown_cb_ = nullptr;
  Chunk* free_ = nullptr;
  unsigned chunks_out_ = 0;
  bool http_;
  bool sniffed_ = false;
  bool started_ = false;      // a handshake began (accepted, or TCP up on the connect side)
  bool established_ = false;
  bool counted_ = false;      // a handshake error was counted
  bool peer_gone_ = false;    // EOF or reset before the handshake ended
  bool in_decrypt_ = false;
  std::string last_error_;   // connect side: OpenSSL's reason for a failed handshake
  std::string failure_;      // connect side: what failed, as logged
};

}  // namespace lb
