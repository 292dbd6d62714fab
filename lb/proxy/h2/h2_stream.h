// One HTTP/2 stream of an H2Conn (h2_conn.h): a request of its own. Its header block gives
// it a key (the listener's hash policies over a view of its fields, the `cookie` crumbs
// joined as RFC 9113 §8.2.3 says), the key a pick through the one pick (bounded loads,
// health, hot-key spread, handover: BackendAttempt), the pick an HTTP/1.1 connection from
// the worker's upstream pool; the request goes up translated (RFC 9113 §8.3: :method,
// :path and :authority become the request line and Host), the response comes back through
// the same HttpParser the HTTP/1.1 proxy uses and goes down as HEADERS and DATA.
//
// The stream's life (Phase), and what moves it on:
//
//   kHeaders ──END_HEADERS──> kReady ──the read is processed──> kConnecting ──connected──>
//   kExchange ──the response is whole and handed to nghttp2──> kAnswered
//   any phase ──nghttp2 closes the stream (sent, reset, GOAWAY)──> freed (H2Conn)
//
//   kHeaders     Field lines arrive (on_header); their bytes are copied into a pool block,
//                at most h2.max_header_list of them (past it the rest are dropped, the
//                stream is answered 431 and the connection counts it: H2StreamHost).
//   kReady       The block is whole. The stream starts only after the whole read it came in
//                is processed, so a HEADERS and its RST_STREAM in one read (rapid reset)
//                never cost a pick or a connect.
//   kConnecting  Picked; the connection opening. Refused or timed out: the next host while
//                the cluster's `retries` last, else 502; no usable host: 503.
//   kExchange    The request head is written, its body follows as DATA arrives (framed by
//                its content-length, else chunked); the response head becomes HEADERS, its
//                body DATA. timeouts.idle with no byte from the backend: 504 before the
//                response head, RST_STREAM after it.
//   kAnswered    lb's part is done (the upstream connection is pooled or closed); the last
//                DATA may still wait in nghttp2 for the client's window.
//
// Flow control (the window is the memory bound): request DATA is acknowledged to the client
// (nghttp2_session_consume, which sends WINDOW_UPDATE) only while less than kBodyHigh of it
// waits for the backend's socket, so a slow backend stalls only its own stream and holds at
// most its window plus kBodyHigh. Response bodies are read from the backend only while less
// than kBodyHigh of them waits for the client's window: a slow client stalls only the
// stream it does not read.
//
// Lifetime: from the worker's H2Worker; owned by its H2Conn, which frees it when nghttp2
// closes the stream (or the connection goes); neither copied nor moved. The backend's
// connection, while held, has this stream as its Connection's owner.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "lb/core/http_fields.h"
#include "lb/http/parser.h"
#include "lb/proxy/h2/body_queue.h"
#include "lb/proxy/h2/h2_memory.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/backend_attempt.h"
#include "lb/runtime/flush_list.h"
#include "lb/runtime/object_pool.h"
#include "lb/runtime/upstream_pool.h"
#include "lb/net/connection.h"
#include "lb/runtime/worker_env.h"
#include "plugins/key.h"

namespace lb {

// What a stream needs of the connection it is on (H2Conn, h2_conn.h, implements it): the
// stream stands below the connection and never includes it.
class H2StreamHost {
 public:
  virtual nghttp2_session* session() noexcept = 0;
  virtual WorkerEnv& worker() noexcept = 0;
  virtual Connection& client() noexcept = 0;
  virtual std::string_view clientIp() const noexcept = 0;
  virtual bool tls() const noexcept = 0;
  // nghttp2 has something to send (a stream submitted or resumed something): written at the
  // end of the loop's turn, with whatever else the turn adds (the worker's FlushList).
  virtual void wantWrite() noexcept = 0;
  // A stream's header block was over h2.max_header_list (answered 431). May end the
  // connection and free every stream, the caller too: its last call.
  virtual void noteOversizedHeaders() noexcept = 0;

 protected:
  ~H2StreamHost() = default;
};

class H2Stream final : private ConnectionOwner, private HttpBodySink, private HttpTrailerSink {
 public:
  enum class Phase : uint8_t {
    kHeaders,      // the request's header block is arriving
    kReady,        // the block is whole: starts once the read it came in is processed
    kConnecting,   // a backend is picked, its connection opening
    kExchange,     // the request goes up, the response comes down
    kAnswered,     // the response is whole and with nghttp2; the backend is let go
  };

  // Bytes of a body waiting in either direction past which the side that produces them
  // pauses (the client's window stops opening, or the backend is not read).
  static constexpr size_t kBodyHigh = 128 * 1024;

  H2Stream() = default;
  H2Stream(const H2Stream&) = delete;
  H2Stream& operator=(const H2Stream&) = delete;

  // A new request stream `id` on `conn`, routed by `snap` (the connection's newest).
  void begin(H2StreamHost* conn, int32_t id, std::shared_ptr<const Snapshot> snap,
             const ListenerSnapshot* ls) noexcept;
  int32_t id() const noexcept { return id_; }
  Phase phase() const noexcept { return phase_; }

  // Decoded header blocks past this many times h2.max_header_list end the connection at once
  // (an HPACK bomb); a block merely over the limit is answered 431.
  static constexpr uint64_t kBombFactor = 16;

  // nghttp2's callbacks for this stream, through H2Conn. onField drops what is past
  // h2.max_header_list (the stream is answered 431 at onHeadersEnd); false: the block is a
  // bomb (kBombFactor), and the connection must end.
  bool onField(std::string_view name, std::string_view value, bool trailer) noexcept;
  void onHeadersEnd(bool end_stream) noexcept;
  void onData(const uint8_t* data, size_t len) noexcept;
  // A DATA frame's bytes are all in (onData): they go up now, as one write.
  void onDataFrameEnd(bool end_stream) noexcept;
  void onRequestEnd() noexcept;
  // kReady: pick, connect, send. After the read that completed the header block.
  void start() noexcept;
  // nghttp2 wants response body bytes for a DATA frame (its data source read callback).
  ssize_t readBody(uint8_t* buf, size_t length, uint32_t* flags) noexcept;
  // The client reset the stream, or the connection goes: let the backend go now.
  void abandon() noexcept;
  // Active checks took `backend` down: a stream still waiting for its answer moves on.
  void backendDown(const BackendState& backend) noexcept;
  // Response bytes wait, and the client's window (the stream's or the connection's) is shut:
  // a stall, if it never opens. Bytes that only wait for this turn's flush are not.
  bool waitingOnClient() const noexcept {
    nghttp2_session* s = conn_->session();
    return !down_q_.empty() && (nghttp2_session_get_stream_remote_window_size(s, id_) <= 0 ||
                                nghttp2_session_get_remote_window_size(s) <= 0);
  }
  // Whether the client reset this stream before lb had an answer for it (rapid reset).
  bool unanswered() const noexcept { return phase_ < Phase::kAnswered && !response_submitted_; }
  // Gives back every block and the snapshot (before the stream returns to its pool).
  void release() noexcept;

  // H2Conn's list of its streams.
  H2Stream* prev = nullptr;
  H2Stream* next = nullptr;
  H2Stream* ready_next = nullptr;   // H2Conn's list of kReady streams

 private:
  // ConnectionOwner: the backend's connection.
  void onConnected(Connection& c, int status) noexcept override;
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onTimer(Connection& c) noexcept override;
  void onClosed(Connection& c) noexcept override { (void)c; }
  // HttpBodySink: the response body, chunk framing removed.
  void onBody(const char* data, size_t len) noexcept override;
  // HttpTrailerSink: a chunked response's trailer fields, copied into trailers_.
  void onTrailerName(const char* data, size_t len) noexcept override;
  void onTrailerValue(const char* data, size_t len) noexcept override;
  void onTrailerFieldEnd() noexcept override;
  bool keepTrailerBytes(const char* data, size_t len) noexcept;
  // The trailers as the stream's last HEADERS (from readBody, at the body's end): false when
  // none is left to send once the fields HTTP/2 may not carry are dropped.
  bool submitTrailers() noexcept;

  // The helpers both answers (the backend's and lb's own) write with.
  static std::string_view statusDigits(int status, char (&out)[3]) noexcept;
  static nghttp2_nv field(std::string_view name, std::string_view value) noexcept;
  // The data source of every response (nghttp2_data_source_read_callback).
  static ssize_t readBodyCallback(nghttp2_session* s, int32_t id, uint8_t* buf, size_t length,
                                  uint32_t* flags, nghttp2_data_source* source, void* user);

  bool deriveKey(const HttpRequestView& view) noexcept;
  void connectUpstream(Pooling pooling) noexcept;
  bool writeRequestHead() noexcept;
  template <typename Put>
  bool requestHead(Put&& put) const noexcept;
  void pumpUp() noexcept;
  void openWindow() noexcept;
  void handleResponseBytes() noexcept;
  bool submitResponseHead() noexcept;
  void responseComplete() noexcept;
  // Before any response byte: the next host when safe, else an answer of lb's own.
  void upstreamFailed(bool connect_failure) noexcept;
  void releaseUpstream(bool reusable) noexcept;
  void noteReset() noexcept;
  // lb's own answer (502, 503, 504, 400), a short text body.
  void answer(int status, HttpErrorReason reason) noexcept;
  // Resets the stream (the response cannot go on), with `code`.
  void reset(uint32_t code) noexcept;
  void record(int status, bool from_backend) noexcept;
  void armUpTimer() noexcept;
  std::string_view fieldValue(std::string_view name) const noexcept;

  H2StreamHost* conn_ = nullptr;
  int32_t id_ = 0;
  Phase phase_ = Phase::kHeaders;
  std::shared_ptr<const Snapshot> snap_;
  const ListenerSnapshot* lst_ = nullptr;
  const ClusterSnapshot* cluster_ = nullptr;

  // The request's fields, copied into fields_ (a pool block): pseudo-header fields apart,
  // the rest in order as the key policies and the request head read them.
  char* fields_ = nullptr;
  uint32_t fields_len_ = 0;
  uint64_t list_bytes_ = 0;      // RFC 9113 §6.5.2's size: name + value + 32 each
  std::string_view method_, path_, authority_, scheme_;
  HttpHeader headers_[ParsedHead::kMaxHeaders];
  uint32_t header_count_ = 0;
  bool oversized_ = false;       // past h2.max_header_list (or a block): answered 431
  bool has_body_ = false;        // no END_STREAM on the request's HEADERS
  bool chunked_up_ = false;      // the body goes up chunked (no content-length)
  bool request_ended_ = false;   // END_STREAM seen
  bool end_written_ = false;     // the body's end (0-chunk) is queued up

  BodyQueue up_q_;               // the request head and body on their way to the backend
  size_t up_inflight_ = 0;       // bytes of up_q_'s front in a queued write
  uint64_t owed_ = 0;            // DATA bytes received, not yet acknowledged to the client
  uint64_t body_in_ = 0;         // DATA bytes received in all
  // A body framed by its content-length: the length, and its last byte, held back until
  // END_STREAM shows the client sent no more (a DATA frame past it resets the stream, and the
  // backend must not have had a whole request by then).
  uint64_t body_declared_ = 0;
  char held_byte_ = 0;
  bool byte_held_ = false;

  BodyQueue down_q_;             // response body bytes for DATA frames
  HttpParser resp_{HTTP_RESPONSE, this};
  char* upin_ = nullptr;         // the backend's bytes (the response head is parsed here)
  uint32_t upin_len_ = 0;
  uint32_t upin_pos_ = 0;        // parsed up to here
  bool interim_ = false;         // a 1xx head is being read (passed on as its own HEADERS)
  // The response's trailer fields (a chunked body's), copied into a pool block as the parser
  // reports them, and sent as the stream's last HEADERS (RFC 9113 §8.1) after its DATA.
  struct TrailerField {
    uint32_t name_off, name_len, value_off, value_len;
  };
  static constexpr uint32_t kMaxTrailers = 32;
  enum class TrailerState : uint8_t {
    kNone,    // between fields
    kName,    // a field's name is arriving
    kValue,   // its value is arriving
    kRefused, // past a block or kMaxTrailers: the stream is reset at the response's end
  };
  char* trailers_ = nullptr;
  uint32_t trailers_len_ = 0;
  uint32_t trailer_count_ = 0;
  TrailerState trailer_state_ = TrailerState::kNone;
  TrailerField trailer_fields_[kMaxTrailers];
  bool response_submitted_ = false;
  bool response_done_ = false;   // the parser reached the end of the response
  bool up_reading_paused_ = false;
  bool deferred_ = false;        // readBody returned NGHTTP2_ERR_DEFERRED
  int status_ = 0;

  BackendAttempt attempt_;
  UpstreamConn* up_ = nullptr;
  uint8_t fresh_retries_ = 0;
  bool up_reused_ = false;       // up_ came from the idle pool
  uint64_t up_touched_ = 0;      // uv_now of the backend's last bytes (its idle timer)
  uint64_t hash_ = 0;
  bool keyed_ = false;
  GeneratedCookie cookie_;
  uint64_t start_ns_ = 0;
  uint64_t bytes_out_ = 0;
};

// A worker's HTTP/2 state, made on the first HTTP/2 connection the worker sees: the free
// list of streams, nghttp2's memory (h2_memory.h), and the flush list its connections write
// through, once per loop turn (the responses a turn's backend reads bring for one client
// leave in one write).
class H2Worker final : public WorkerService {
 public:
  static constexpr size_t kMaxFree = 256;
  explicit H2Worker(WorkerEnv& env) : flushes_(env.loop()) {}
  static H2Worker* of(WorkerEnv& env) noexcept { return env.service<H2Worker>(); }
  ObjectPool<H2Stream>& streams() noexcept { return pool_; }
  FlushList& flushes() noexcept { return flushes_; }
  H2Memory& memory() noexcept { return memory_; }
  void close() noexcept override { flushes_.close(); }

 private:
  ObjectPool<H2Stream> pool_{kMaxFree};
  H2Memory memory_;
  FlushList flushes_;
};

}  // namespace lb
