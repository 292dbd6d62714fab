// One client connection speaking HTTP/2 (RFC 9113), framed by nghttp2 (the library Envoy
// and curl use), each of its streams a request of its own (h2_stream.h). The HTTP/1.1
// session that accepted the connection hands it over (lb/runtime/h2_handoff.h) when TLS's
// ALPN chose "h2" or the connection opened with the h2c preface; from then this room owns
// the client's Connection's events.
//
// The connection's life (State):
//
//   kOpen ──drain──> kDraining ──the last stream closes──> kClosed
//     │                 │
//     │ a connection error, a flood, the client's EOF, a stall, abort
//     v                 v
//   kClosing (GOAWAY queued: written, then closed) ──written──> kClosed
//
//   kOpen       Frames both ways. Reads feed nghttp2; the streams whose header block
//               completed in a read start after it; what nghttp2 has to send is written at
//               the end of the loop's turn (the worker's FlushList), one block at a time, so
//               the answers one turn brings leave in one write; reading from the client
//               pauses while a write is queued, so an unread response costs one block.
//   kDraining   GOAWAY (NO_ERROR) names the last stream lb took; those finish, new ones
//               are refused by nghttp2; the connection closes when none is left.
//   kClosing    A GOAWAY with an error (ENHANCE_YOUR_CALM for floods and bombs, the RFC's
//               code otherwise) is going out: nothing more is read; closed once written.
//   kClosed     Handed back to the HTTP session, which frees this room after the last
//               callback.
//
// Protections, each a GOAWAY and a count by reason (lb_h2_goaways_total): streams reset by
// the client before lb answered, past a token bucket (rapid reset, CVE-2023-44487; the
// bucket is lb's, so that the reset streams never reached a backend: see h2_stream.h,
// kReady); CONTINUATION frames past nghttp2's limit (CVE-2024-27316); SETTINGS and PING
// frames past lb's own budgets (FrameBudget: 100 at once, 10 a second), and acknowledgements
// the client does not read past nghttp2's max_outbound_ack; empty DATA frames without
// END_STREAM; header blocks over h2.max_header_list again and again (an HPACK bomb decodes to
// far more than it sends); and, with streams open, no progress for timeouts.idle while lb
// holds bytes the client does not take (a zero window held shut; a stream waiting on its
// backend is that stream's to time out, 504). An idle connection (no stream) closes after
// timeouts.idle with GOAWAY NO_ERROR. After an error nghttp2 calls fatal, lb writes the
// GOAWAY frame itself (fatalGoAway). Every GOAWAY with an error ends in a lingering close,
// so the client reads it rather than a reset.
#pragma once

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "lb/core/stats.h"
#include "lb/net/connection.h"
#include "lb/proxy/h2/h2_stream.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/h2_handoff.h"
#include "lb/runtime/worker_env.h"

namespace lb {

// A token bucket of frames a client may send: `burst` at once, `rate` more each second.
struct FrameBudget {
  double tokens = 0;
  uint64_t stamp = 0;   // uv_now of the last refill
  void fill(double burst, uint64_t now) noexcept {
    tokens = burst;
    stamp = now;
  }
  // False when the bucket is empty: the client sends faster than it may.
  bool take(double burst, double rate, uint64_t now) noexcept {
    tokens = std::min(burst, tokens + rate * static_cast<double>(now - stamp) / 1000.0);
    stamp = now;
    if (tokens < 1.0) return false;
    tokens -= 1.0;
    return true;
  }
};

class H2Conn final : public H2Room, public H2StreamHost, private ConnectionOwner, private Flushable {
 public:
  // lb/runtime/h2_handoff.h's start function.
  static H2Room* start(const H2Start& start) noexcept;
  ~H2Conn() override;
  H2Conn(const H2Conn&) = delete;
  H2Conn& operator=(const H2Conn&) = delete;

  // H2Room
  void drain() noexcept override;
  void abort() noexcept override;
  void backendDown(const BackendState& backend) noexcept override;

  // H2StreamHost
  nghttp2_session* session() noexcept override { return session_; }
  WorkerEnv& worker() noexcept override { return *worker_; }
  Connection& client() noexcept override { return *client_; }
  std::string_view clientIp() const noexcept override { return {client_ip_, client_ip_len_}; }
  bool tls() const noexcept override { return tls_; }
  void wantWrite() noexcept override;
  void noteOversizedHeaders() noexcept override;

 private:
  enum class State : uint8_t { kOpen, kDraining, kClosing, kClosed };

  H2Conn(const H2Start& start);
  bool init() noexcept;

  // ConnectionOwner: the client's connection.
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onTimer(Connection& c) noexcept override;
  void onClosed(Connection& c) noexcept override;

  // nghttp2's callbacks (user_data is the H2Conn).
  static int onBeginFrame(nghttp2_session* s, const nghttp2_frame_hd* hd, void* user);
  static int onBeginHeaders(nghttp2_session* s, const nghttp2_frame* frame, void* user);
  static int onHeader(nghttp2_session* s, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                      void* user);
  static int onFrameRecv(nghttp2_session* s, const nghttp2_frame* frame, void* user);
  static int onDataChunk(nghttp2_session* s, uint8_t flags, int32_t stream_id,
                         const uint8_t* data, size_t len, void* user);
  static int onStreamClose(nghttp2_session* s, int32_t stream_id, uint32_t error_code,
                           void* user);
  static int onFrameSend(nghttp2_session* s, const nghttp2_frame* frame, void* user);
  static int onInvalidFrame(nghttp2_session* s, const nghttp2_frame* frame, int error,
                            void* user);

  // Flushable: writes what nghttp2 has to send, a block at a time; a write the socket does
  // not take whole waits for onWritten, and reading pauses meanwhile.
  void flush() noexcept override;
  void feed(const uint8_t* p, size_t n) noexcept;
  void startReady() noexcept;
  // Ends the connection with a GOAWAY of `code`, counted under `reason`.
  void goAway(uint32_t code, H2GoawayReason reason) noexcept;
  // Hands the connection back to the HTTP session and closes it: at once, or (linger) after
  // shutting the write side and reading what the client still sends for up to a second, so
  // that it reads lb's GOAWAY rather than a reset caused by its own unread bytes.
  void closeNow(bool linger = false) noexcept;
  // After an error nghttp2 calls fatal (its session may not be used again): lb's own GOAWAY
  // frame, counted under `reason`, then the lingering close.
  void fatalGoAway(uint32_t code, H2GoawayReason reason) noexcept;
  void maybeFinish() noexcept;
  void freeStream(H2Stream* st) noexcept;
  void touch() noexcept;

  WorkerEnv* worker_;
  std::shared_ptr<const Snapshot> snap_;
  const ListenerSnapshot* lst_;
  ListenerWorkerStats* lstats_;
  Connection* client_;
  ConnectionOwner* shell_;
  char client_ip_[64] = {};
  uint32_t client_ip_len_ = 0;
  bool tls_ = false;
  State state_ = State::kOpen;
  nghttp2_session* session_ = nullptr;
  H2Worker* h2_worker_ = nullptr;   // the worker's streams and flush list

  H2Stream* streams_ = nullptr;     // every stream not yet closed by nghttp2
  uint32_t stream_count_ = 0;
  // The stream whose header block is being decoded (set at its HEADERS, forgotten when it is
  // freed): each field of the block finds it here rather than in nghttp2's stream map.
  H2Stream* decoding_ = nullptr;
  H2Stream* ready_ = nullptr;       // kReady streams, started after the current read
  H2Stream** ready_tail_ = &ready_;
  bool in_read_ = false;            // inside feed(): streams wait for the read's end
  bool in_send_ = false;            // inside nghttp2_session_mem_send

  char* in_ = nullptr;              // the read block (given back when a read finds nothing)
  char* out_ = nullptr;             // what nghttp2 produced, on its way to the socket
  ConnectionWrite write_;
  ConnectionWrite goaway_write_;    // fatalGoAway's frame
  uint8_t goaway_frame_[17] = {};
  bool writing_ = false;
  // mem_send's last piece that did not fit in out_ (nghttp2's own memory, valid until the
  // next mem_send).
  const uint8_t* pending_ = nullptr;
  size_t pending_len_ = 0;
  bool reading_paused_ = false;
  // kDraining: the shutdown notice is out, the GOAWAY naming the last stream not yet.
  bool drain_notice_ = false;
  // PING and SETTINGS frames in the current read: which of them flooded.
  uint32_t pings_ = 0;
  uint32_t settings_ = 0;

  uint64_t last_progress_ = 0;      // uv_now of the last byte either way
  // Rapid reset: streams the client may reset before lb answered them; and SETTINGS and
  // PING frames (not acknowledgements), each of which costs lb an answer.
  FrameBudget resets_;
  FrameBudget settings_budget_;
  FrameBudget pings_budget_;
  uint32_t empty_frames_ = 0;       // empty DATA frames without END_STREAM
  uint32_t oversized_ = 0;          // header blocks refused for h2.max_header_list
  // What a callback that failed the session wants the GOAWAY to say (feed's fatalGoAway).
  uint32_t fatal_code_ = NGHTTP2_PROTOCOL_ERROR;
  H2GoawayReason fatal_reason_ = H2GoawayReason::kProtocolError;
  // RFC 9113 §5.1.1: a new stream's id is above every id the client used before. nghttp2
  // ignores a HEADERS below the highest id (it may be trailers of a stream lb reset), so lb
  // remembers the ids the client skipped: HEADERS on one of those opens a stream out of
  // order, a connection error. The oldest skipped ranges are forgotten past kSkipped (and
  // then such HEADERS are only ignored).
  static constexpr size_t kSkipped = 8;
  struct IdRange {
    int32_t lo, hi;
  };
  int32_t max_stream_id_ = 0;
  IdRange skipped_[kSkipped] = {};
  uint32_t skipped_count_ = 0;      // ranges recorded in all (the last kSkipped are kept)
};

}  // namespace lb
