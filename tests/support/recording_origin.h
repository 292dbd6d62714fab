// A raw origin for byte-for-byte tests: it records every byte it receives on each accepted
// connection, exactly as received, and answers each request it can frame with a fixed response.
// lb-origin parses requests itself and shows only what it understood; this one shows what lb
// sent, so a smuggled second request, a header that should have been dropped or a body lb
// should never have passed on is visible as bytes.
//
// Framing is deliberately simple and strict (head up to CRLF CRLF; Content-Length or a final
// chunked Transfer-Encoding; chunk lines and trailers): what it cannot frame it records and
// never answers. Test-thread API; the server runs in its own thread.
//
//   RecordingOrigin origin;
//   ASSERT_TRUE(origin.ok());
//   auto mark = origin.mark();
//   ... send a request through lb to origin.address() ...
//   EXPECT_EQ(origin.receivedSince(mark), expected_bytes);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace lb::test {

class RecordingOrigin {
 public:
  // What a request is answered with, by default.
  static constexpr const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

  // Listens on 127.0.0.1 on a port the kernel picks and starts serving; check ok().
  RecordingOrigin();
  // Stops the thread and closes every socket.
  ~RecordingOrigin();
  RecordingOrigin(const RecordingOrigin&) = delete;
  RecordingOrigin& operator=(const RecordingOrigin&) = delete;

  bool ok() const { return listen_fd_ >= 0; }
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // The bytes each framed request is answered with from now on (sent as they are, so they
  // may be malformed on purpose); with close_after, the connection is closed after them.
  void setResponse(std::string raw, bool close_after = false);

  // How many bytes each connection had received: a point to compare against later.
  using Mark = std::vector<size_t>;
  Mark mark();
  // Everything received since `m`, connection after connection in accept order. First reads
  // whatever the kernel already holds on every connection, so bytes a peer wrote before this
  // call are in the result.
  std::string receivedSince(const Mark& m);
  // Connections accepted so far.
  size_t connections();
  // Whether the peer closed connection i (EOF or reset seen); reads what is pending first.
  bool peerClosed(size_t i);
  // Waits until the peer closed connection i; false at the deadline.
  bool waitPeerClosed(size_t i, Millis timeout = 5s);

 private:
  struct Conn {
    int fd = -1;
    std::string received;   // every byte, as received
    std::string pending;    // received and not yet framed
    bool peer_closed = false;
    bool stuck = false;     // could not frame: records on, answers no more
  };

  void run();
  // Reads everything readable now on every socket (accepting new connections too).
  void drainAll();
  void acceptAll();
  void readConn(Conn& c);
  // Frames and answers what c.pending holds.
  void serve(Conn& c);
  // Waits until the server thread has done a drainAll() that started after this call.
  void sync();

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  int wake_[2] = {-1, -1};   // self-pipe: sync requests and stop
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::string response_ = kOk;
  bool close_after_ = false;
  uint64_t sync_requested_ = 0;
  uint64_t sync_done_ = 0;
  bool stop_ = false;
};

}  // namespace lb::test
