// One client connection of lb-origin, the test origin server (tools/origin/main.cc documents the
// per-request behaviours). Requests are parsed with llhttp and answered strictly in order, one
// at a time: the parser pauses at the end of each message until that message's response has
// been queued, so pipelined requests never overtake each other.
//
// Loop thread only. The object owns its uv handles (handle.data = this) and deletes itself in
// the last close callback; nothing else may delete it.
#pragma once

#include <llhttp.h>
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lb::origin {

// Shared by every worker of one lb-origin process; the counters back /stats.
struct OriginShared {
  std::string name;                                  // X-Backend value
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> requests_served{0};          // counted when a request head is parsed
  std::atomic<int64_t> connections_active{0};
};

// Shared by origin_conn.cc and origin_respond.cc.
const char* reasonPhrase(int status);   // "OK" for 200; "Status" for codes it does not know
std::string hexSize(uint64_t n);          // a chunk-size line's number: 1000 -> "3e8"

class OriginConn {
 public:
  // Accepts one pending connection on `server` and starts reading. Registers itself in
  // `live` (the worker's set, used to close everything on shutdown) until it is freed.
  // Returns false when accept fails (nothing is left allocated).
  static bool accept(uv_stream_t* server, OriginShared* shared, std::set<OriginConn*>* live);

  OriginConn(const OriginConn&) = delete;
  OriginConn& operator=(const OriginConn&) = delete;

  // Closes now (idempotent); with reset = true the peer gets RST instead of FIN. Pending
  // writes are cancelled; the object is freed in the last close callback.
  void close(bool reset = false);

 private:
  enum class Mode { kFixed, kEcho, kBytes, kTunnel };

  // One request/response exchange.
  struct Exchange {
    std::string url;
    std::vector<std::pair<std::string, std::string>> headers;
    bool in_value = false;
    size_t head_bytes = 0;
    bool head_done = false;
    bool message_done = false;
    bool response_started = false;
    bool response_done = false;
    bool keep_alive = true;
    bool is_head = false;
    bool chunked_out = false;
    bool websocket = false;
    Mode mode = Mode::kFixed;
    uint64_t body_bytes = 0;       // request body bytes seen
    uint64_t bytes_left = 0;       // /bytes: still to send
    uint64_t delay_ms = 0;
    bool delayed = false;          // the delay already ran
  };

  OriginConn(OriginShared* shared, std::set<OriginConn*>* live);
  ~OriginConn();

  // libuv trampolines: recover `this` from handle->data, never throw.
  static void onAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void onWrite(uv_write_t* req, int status);
  static void onShutdown(uv_shutdown_t* req, int status);
  static void onTimer(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);

  // llhttp trampolines.
  static int onMessageBegin(llhttp_t* p);
  static int onUrl(llhttp_t* p, const char* at, size_t n);
  static int onHeaderField(llhttp_t* p, const char* at, size_t n);
  static int onHeaderValue(llhttp_t* p, const char* at, size_t n);
  static int onHeadersComplete(llhttp_t* p);
  static int onBody(llhttp_t* p, const char* at, size_t n);
  static int onMessageComplete(llhttp_t* p);
  static const llhttp_settings_t* settings();

  void handleRead(ssize_t n, const uv_buf_t* buf);
  void handleWriteDone(int status, bool bytes_chunk);
  void drive();                    // feeds pending_ to llhttp while not paused
  void afterPause();               // decides what a paused parser waits for
  void resumeIfReady();            // next exchange once this one's message and response are done
  void updateReading();
  int headersComplete();
  void startResponse();            // writes the head (and a fixed body) of the current exchange
  void sendBytesChunk();           // /bytes: one chunk, the next when this one is written
  void finishResponse();
  void badRequest(int status, const char* reason);
  void closeAfterWrites();         // graceful: FIN once queued writes are flushed, then linger
  void startLinger();

  // Queues bytes (copied) / a static buffer (not copied) for writing.
  void write(std::string data);
  void writeStatic(const char* data, size_t n, std::string prefix, std::string suffix,
                   bool bytes_chunk);

  OriginShared* shared_;
  std::set<OriginConn*>* live_;
  uint64_t id_;
  uint64_t exchanges_ = 0;
  uv_tcp_t tcp_;
  uv_timer_t timer_;
  uv_shutdown_t shutdown_req_;
  llhttp_t parser_;
  Exchange ex_;
  std::string pending_;            // received, not yet parsed
  char read_buf_[65536];
  int pending_closes_ = 0;
  size_t writes_in_flight_ = 0;
  bool closing_ = false;           // close() called
  bool paused_ = false;            // llhttp paused; pending_ holds what follows
  bool driving_ = false;
  bool reading_ = false;
  bool read_eof_ = false;
  bool tunnel_ = false;
  bool close_after_writes_ = false;
  bool lingering_ = false;
};

}  // namespace lb::origin
