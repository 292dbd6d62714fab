// A tcp listener splices every byte (lb/net/splice_pump.h): real lb, one worker, a backend of
// the test's own on 127.0.0.1 that follows a one-line command (so each test decides what the
// far side does), and real sockets. Checksums (XXH3-64) on both ends prove bytes arrive
// identical; lb's VmRSS while a reader stops proves back-pressure; /proc/PID/fd proves no
// descriptor or pipe outlives its connection.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/metrics_fleet.h"
#include "tests/support/proxy_harness.h"
#include "tests/support/leak_rounds.h"

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 1 << 20;

// The bytes every stream carries: one pseudo-random MiB, repeated.
const std::string& pattern() {
  static const std::string p = [] {
    std::string s(kChunk, '\0');
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < s.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      memcpy(&s[i], &x, 8);
    }
    return s;
  }();
  return p;
}

uint64_t patternHash(uint64_t n) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (uint64_t done = 0; done < n;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(kChunk, n - done));
    XXH3_64bits_update(st, pattern().data(), k);
    done += k;
  }
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

bool sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Sends n bytes of the pattern; false when the peer went away first.
bool sendPattern(int fd, uint64_t n) {
  for (uint64_t done = 0; done < n;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(kChunk, n - done));
    if (!sendAll(fd, pattern().data(), k)) return false;
    done += k;
  }
  return true;
}

// The test's backend. Per connection, one command line:
//   "UP\n": read to EOF, answer the XXH3 of what came and the byte count, close;
//   "DOWN n\n": send n pattern bytes, close;
//   "DOWNHOLD n\n": send n pattern bytes, then keep the connection open, sending nothing,
//   until the peer closes.
// Each connection runs on a thread of its own; send_failed counts streams the peer cut.
class CommandBackend {
 public:
  CommandBackend() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 512);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~CommandBackend() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    for (auto& t : workers_) t.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  std::atomic<int> send_failed{0};
  std::atomic<int> served{0};

 private:
  void acceptLoop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      // Short jobs (the leak test's thousands) finish inline; the rest get a thread.
      workers_.emplace_back([this, c] { serve(c); });
      if (workers_.size() > 64) {
        for (auto& t : workers_) t.join();
        workers_.clear();
      }
    }
  }
  void serve(int c) {
    std::string line;
    char ch;
    while (line.size() < 64 && ::recv(c, &ch, 1, 0) == 1 && ch != '\n') line += ch;
    if (line == "UP") {
      XXH3_state_t* st = XXH3_createState();
      XXH3_64bits_reset(st);
      std::vector<char> buf(kChunk);
      uint64_t total = 0;
      for (ssize_t k; (k = ::recv(c, buf.data(), buf.size(), 0)) > 0;) {
        XXH3_64bits_update(st, buf.data(), static_cast<size_t>(k));
        total += static_cast<uint64_t>(k);
      }
      std::string answer = std::to_string(XXH3_64bits_digest(st)) + " " + std::to_string(total) +
                           "\n";
      XXH3_freeState(st);
      sendAll(c, answer.data(), answer.size());
    } else if (line.rfind("DOWN ", 0) == 0) {
      if (!sendPattern(c, std::stoull(line.substr(5)))) ++send_failed;
    } else if (line.rfind("DOWNHOLD ", 0) == 0) {
      if (!sendPattern(c, std::stoull(line.substr(9)))) ++send_failed;
      while (::recv(c, &ch, 1, 0) > 0) {
      }
    }
    ++served;
    ::close(c);
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

// A blocking client socket with a receive timeout, so no read waits forever.
class StreamClient {
 public:
  explicit StreamClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~StreamClient() { close(); }
  bool ok() const { return ok_; }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool send(const std::string& s) { return sendAll(fd_, s.data(), s.size()); }
  // Reads up to `limit` bytes (or to EOF), hashing them; *eof tells whether the peer closed
  // (FIN or reset) before the limit; false on a timeout.
  bool readHashed(uint64_t limit, uint64_t* got, uint64_t* hash, bool* eof) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    std::vector<char> buf(kChunk);
    *got = 0;
    *eof = false;
    bool ok = true;
    while (*got < limit) {
      ssize_t k = ::recv(fd_, buf.data(), std::min<uint64_t>(buf.size(), limit - *got), 0);
      if (k > 0) {
        XXH3_64bits_update(st, buf.data(), static_cast<size_t>(k));
        *got += static_cast<uint64_t>(k);
        continue;
      }
      if (k == 0 || errno == ECONNRESET) *eof = true;
      else ok = false;   // the receive timeout
      break;
    }
    *hash = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return ok;
  }
  std::string readLine() {
    std::string s;
    char ch;
    while (s.size() < 128 && ::recv(fd_, &ch, 1, 0) == 1 && ch != '\n') s += ch;
    return s;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

class TcpSpliceTest : public ::testing::Test {
 protected:
  void startLb(const std::string& idle = "60s") {
    std::string why;
    ASSERT_TRUE(h_.startLb("[lb]\nworkers = 1\naccess_log = \"\"\n"
                           "[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                           "[listeners.pipe]\nlisten = \"127.0.0.1:{PORT}\"\nprotocol = \"tcp\"\n"
                           "cluster = \"c\"\non_missing_key = \"round_robin\"\n"
                           "timeouts = { idle = \"" + idle + "\" }\n"
                           "[clusters.c]\nbackends = [ { name = \"b\", address = \"127.0.0.1:" +
                               std::to_string(backend_.port()) + "\" } ]\n",
                           &why))
        << why;
    ASSERT_TRUE(waitActive(0)) << h_.lb().output();
  }

  // lb_splice_pipes{state}, or -1.
  double pipes(const std::string& state) {
    return metricValue(h_.adminPort(), "lb_splice_pipes", {{"state", state}}).value_or(-1);
  }
  // lb_backend_bytes_total, both directions.
  double backendBytes() { return sampleSum(scrape(h_.adminPort()), "lb_backend_bytes_total", {}); }
  double listenerMetric(const std::string& name) {
    auto r = httpGetLocal(h_.adminPort(), "/metrics");
    if (!r.ok) return -1;
    auto by = byLabel(parseExposition(r.body), name, "listener");
    return by.count("pipe") ? by["pipe"] : -1;
  }
  bool waitActive(double n, std::chrono::milliseconds within = 10s) {
    for (auto end = Clock::now() + within; Clock::now() < end;) {
      if (listenerMetric("lb_downstream_connections_active") == n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  int lbFds() {
    std::string dir = "/proc/" + std::to_string(h_.lb().pid()) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return -1;
    int n = 0;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n;
  }

  CommandBackend backend_;
  ProxyHarness h_;
};

TEST_F(TcpSpliceTest, AGibibyteUploadArrivesByteIdentical) {
  startLb();
  constexpr uint64_t kBytes = 1ull << 30;
  StreamClient c(h_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send("UP\n"));
  ASSERT_TRUE(sendPattern(c.fd(), kBytes));
  ::shutdown(c.fd(), SHUT_WR);   // half-close passes through: the backend reads EOF
  EXPECT_EQ(c.readLine(), std::to_string(patternHash(kBytes)) + " " + std::to_string(kBytes));
}

TEST_F(TcpSpliceTest, AGibibyteDownloadArrivesByteIdenticalThroughAReaderThatStops) {
  startLb();
  constexpr uint64_t kBytes = 1ull << 30;
  StreamClient c(h_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send("DOWN " + std::to_string(kBytes) + "\n"));
  // Read the first 16 MiB, then stop: the backend keeps sending until every buffer on the
  // way is full. lb's own memory must not grow with what the backend would send.
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::vector<char> buf(kChunk);
  uint64_t got = 0;
  auto readUpTo = [&](uint64_t until) {
    while (got < until) {
      ssize_t k = ::recv(c.fd(), buf.data(), std::min<uint64_t>(buf.size(), until - got), 0);
      if (k <= 0) return false;
      XXH3_64bits_update(st, buf.data(), static_cast<size_t>(k));
      got += static_cast<uint64_t>(k);
    }
    return true;
  };
  ASSERT_TRUE(readUpTo(16 << 20));
  std::this_thread::sleep_for(300ms);   // let the buffers fill before the first sample
  const long rss_stopped = h_.lbStatusKib("VmRSS");
  long rss_max = rss_stopped;
  for (int i = 0; i < 20; ++i) {   // 2 s stopped
    std::this_thread::sleep_for(100ms);
    rss_max = std::max(rss_max, h_.lbStatusKib("VmRSS"));
  }
  EXPECT_LT(rss_max - rss_stopped, 4096) << "lb grew by " << rss_max - rss_stopped << " KiB";
  ASSERT_TRUE(readUpTo(kBytes));
  EXPECT_EQ(XXH3_64bits_digest(st), patternHash(kBytes));
  XXH3_freeState(st);
  char tail;
  EXPECT_EQ(::recv(c.fd(), &tail, 1, 0), 0) << "the backend's close must reach the client";
}

TEST_F(TcpSpliceTest, ASlowWriterArrivesByteIdentical) {
  startLb();
  StreamClient c(h_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send("UP\n"));
  // 200 small writes with pauses: every one a separate splice of a few bytes.
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  uint64_t total = 0;
  for (int i = 0; i < 200; ++i) {
    size_t n = 1 + static_cast<size_t>(i) * 37 % 3000;
    ASSERT_TRUE(sendAll(c.fd(), pattern().data() + i, n));
    XXH3_64bits_update(st, pattern().data() + i, n);
    total += n;
    std::this_thread::sleep_for(2ms);
  }
  ::shutdown(c.fd(), SHUT_WR);
  EXPECT_EQ(c.readLine(), std::to_string(XXH3_64bits_digest(st)) + " " + std::to_string(total));
  XXH3_freeState(st);
}

TEST_F(TcpSpliceTest, AClientThatClosesMidStreamEndsTheBackendConnection) {
  startLb();
  {
    StreamClient c(h_.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send("DOWN " + std::to_string(1ull << 30) + "\n"));
    uint64_t got, hash;
    bool eof;
    ASSERT_TRUE(c.readHashed(4 << 20, &got, &hash, &eof));
    EXPECT_EQ(hash, patternHash(4 << 20));
  }   // closed with bytes unread: the kernel resets it
  EXPECT_TRUE(waitActive(0)) << "lb kept the connection after its client closed";
  for (auto end = Clock::now() + 10s; backend_.send_failed == 0 && Clock::now() < end;)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(backend_.send_failed.load(), 1) << "the backend's stream was not cut";
}

TEST_F(TcpSpliceTest, ABackendThatClosesMidStreamClosesTheClientAfterItsLastByte) {
  startLb();
  // The backend sends 8 MiB + 5 of a stream the client expects to be 1 GiB, then closes.
  const uint64_t kSent = (8 << 20) + 5;
  StreamClient c(h_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send("DOWN " + std::to_string(kSent) + "\n"));
  uint64_t got, hash;
  bool eof;
  auto t0 = Clock::now();
  ASSERT_TRUE(c.readHashed(1ull << 30, &got, &hash, &eof)) << "no close within 10 s";
  EXPECT_TRUE(eof);
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_EQ(got, kSent);
  EXPECT_EQ(hash, patternHash(kSent));
  // Half-closed (the client may still send): the connection ends once the client closes too.
  EXPECT_EQ(listenerMetric("lb_downstream_connections_active"), 1);
  c.close();
  EXPECT_TRUE(waitActive(0));
}

TEST_F(TcpSpliceTest, TheIdleTimeoutClosesAStalledSplicedStream) {
  startLb("1s");
  StreamClient c(h_.port());
  ASSERT_TRUE(c.ok());
  const uint64_t kSent = 32 << 20;
  ASSERT_TRUE(c.send("DOWNHOLD " + std::to_string(kSent) + "\n"));
  uint64_t got, hash;
  bool eof;
  auto t0 = Clock::now();
  ASSERT_TRUE(c.readHashed(1ull << 30, &got, &hash, &eof)) << "no close within 10 s";
  auto took = Clock::now() - t0;
  EXPECT_TRUE(eof);
  EXPECT_EQ(got, kSent);
  EXPECT_EQ(hash, patternHash(kSent));
  // The stream itself took a while: the close came about one idle period after it stalled.
  EXPECT_GE(took, 1s);
  EXPECT_LT(took, 4s);
  EXPECT_TRUE(waitActive(0));
}

TEST_F(TcpSpliceTest, TenThousandConnectionsLeaveNoDescriptorOrPipeBehind) {
  startLb();
  auto once = [&] {
    StreamClient c(h_.port());
    if (!c.ok() || !c.send("DOWN 70000\n")) return false;
    uint64_t got, hash;
    bool eof;
    return c.readHashed(1 << 20, &got, &hash, &eof) && eof && got == 70000 &&
           hash == patternHash(70000);
  };
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(once());   // the pipe pool is warm
  ASSERT_TRUE(waitActive(0));
  // The admin connection that read the metric may still be closing: settle first.
  auto settled = [&](int limit) {
    int n = lbFds();
    for (auto end = Clock::now() + 5s; n > limit && Clock::now() < end; n = lbFds())
      std::this_thread::sleep_for(20ms);
    return n;
  };
  std::this_thread::sleep_for(200ms);
  const int before = settled(0);
  ASSERT_GT(before, 0);
  for (int i = 0; i < leakRounds(10000); ++i) ASSERT_TRUE(once()) << "connection " << i;
  ASSERT_TRUE(waitActive(0));
  EXPECT_EQ(settled(before), before);
}

// Every byte of a tcp listener is spliced: lb_spliced_bytes_total is exactly what the backend
// counters saw both ways, and once the connections are gone no pipe is left in use.
TEST_F(TcpSpliceTest, MetricsCountEverySplicedByteAndEveryPipeComesBack) {
  startLb();
  EXPECT_EQ(listenerMetric("lb_spliced_bytes_total"), 0);
  EXPECT_EQ(pipes("in_use"), 0);
  {
    StreamClient c(h_.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send("DOWN " + std::to_string(8 << 20) + "\n"));
    uint64_t got, hash;
    bool eof;
    ASSERT_TRUE(c.readHashed(64 << 20, &got, &hash, &eof));
    ASSERT_TRUE(eof);
    ASSERT_EQ(got, 8u << 20);
  }
  {
    StreamClient c(h_.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send("UP\n"));
    ASSERT_TRUE(sendPattern(c.fd(), 4 << 20));
    ::shutdown(c.fd(), SHUT_WR);
    EXPECT_EQ(c.readLine(), std::to_string(patternHash(4 << 20)) + " " + std::to_string(4 << 20));
  }
  ASSERT_TRUE(waitActive(0));
  const double spliced = listenerMetric("lb_spliced_bytes_total");
  EXPECT_GE(spliced, 12 << 20);
  EXPECT_EQ(spliced, backendBytes()) << "a tcp listener copied some bytes";
  double in_use = pipes("in_use");
  for (auto end = Clock::now() + 5s; in_use != 0 && Clock::now() < end; in_use = pipes("in_use"))
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(in_use, 0);
  EXPECT_GE(pipes("pooled"), 1);
}

TEST_F(TcpSpliceTest, AnIdleSplicedConnectionHoldsNoPipe) {
  startLb();
  std::this_thread::sleep_for(200ms);
  const int before = lbFds();
  constexpr int kConns = 50;
  std::vector<std::unique_ptr<StreamClient>> conns;
  for (int i = 0; i < kConns; ++i) {
    conns.push_back(std::make_unique<StreamClient>(h_.port()));
    ASSERT_TRUE(conns.back()->ok());
    ASSERT_TRUE(conns.back()->send("UP\n"));   // a byte crossed: then nothing more
  }
  ASSERT_TRUE(waitActive(kConns));
  // Two sockets per connection; a pipe only while bytes cross (pooled ones are shared: the
  // pool has at most the few a burst needed), a duplicate only for a destination that once
  // returned EAGAIN (none here).
  int n = lbFds();
  for (auto end = Clock::now() + 5s; n != before + 2 * kConns && Clock::now() < end; n = lbFds())
    std::this_thread::sleep_for(20ms);
  EXPECT_LE(n, before + 2 * kConns + 4);
  EXPECT_GE(n, before + 2 * kConns);
  conns.clear();
  EXPECT_TRUE(waitActive(0));
}

}  // namespace
}  // namespace lb::test
