// Spliced HTTP bodies both ways (lb/proxy/http/http_session_splice.cc): a request's
// Content-Length body of kSpliceMin or more goes client to backend by splice(2), as a
// response's goes backend to client. Real lb (one worker) and a real lb-origin, whose echo
// mode answers a POST with its own body: checked by hash, with the copy through lb's user
// space measured from /proc/PID/io (splice moves bytes kernel to kernel, so rchar does not
// grow with them); an upgraded tunnel, spliced both ways; clients that leave mid-body; a stalled upload; descriptors after 10,000
// spliced requests; and a kernel that refuses splice (a seccomp filter on lb makes every
// splice(2) fail with ENOSYS or EINVAL), where the copy path must carry the same bytes.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/proxy_harness.h"
#include "tests/support/splice_test_util.h"
#include "tests/support/leak_rounds.h"

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string post(size_t n) {
  return "POST /echo HTTP/1.1\r\nHost: t\r\nx-key: k\r\nContent-Length: " + std::to_string(n) +
         "\r\n\r\n";
}

int fdCount(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// lb-origin's connections open now (its /stats), polled until it is `want` or 5 s pass.
bool originConnections(uint16_t port, long want) {
  long now = -1;
  for (auto end = Clock::now() + 5s; Clock::now() < end;) {
    // The /stats request is itself one open connection while it is answered.
    now = originStat(port, "connections_active") - 1;
    if (now == want) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// The body goes out on its own thread while the test reads the echo: the origin answers as
// it reads, so one thread doing both would deadlock once every buffer on the way is full.
HttpResponse postAndRead(TcpClient& c, const std::string& body) {
  bool sent = false;
  std::thread t([&] {
    std::string all = post(body.size()) + body;
    size_t at = 0;
    while (at < all.size()) {
      ssize_t k = ::send(c.fd(), all.data() + at, all.size() - at, MSG_NOSIGNAL);
      if (k > 0) {
        at += static_cast<size_t>(k);
        continue;
      }
      pollfd p{c.fd(), POLLOUT, 0};   // TcpClient's socket is non-blocking
      if (k < 0 && (errno == EAGAIN || errno == EINTR) && ::poll(&p, 1, 10000) > 0) continue;
      break;
    }
    sent = at == all.size();
  });
  auto r = readHttpResponse(c, false, 30s);
  t.join();
  if (!sent) {
    r.ok = false;
    r.error = "the upload did not go out whole";
  }
  return r;
}

class HttpSpliceBodyTest : public SpliceTest {};

TEST_F(HttpSpliceBodyTest, AnUploadAndItsEchoAreSplicedAndArriveIdentical) {
  ASSERT_TRUE(startWithOrigin());
  const std::string body = noise(32 << 20, 7);
  const long long rchar0 = procIo(h.lb().pid(), "rchar");
  auto r = postAndRead(c, body);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("x-body-bytes"), std::to_string(body.size()));
  EXPECT_TRUE(r.body == body) << "the echo differs (" << r.body.size() << " bytes)";
  EXPECT_TRUE(r.keep_alive);
  // 64 MiB crossed lb; what it read through user space is the heads, the first body bytes
  // of each direction and the echo's part that came while the upload was still under way
  // (a response is spliced only once its request is sent whole): how much of the echo that
  // is depends on timing (about 20 MiB at -O2, 29 MiB under SAN=1), but past 33 MiB the
  // upload itself would have been copied.
  const long long copied = procIo(h.lb().pid(), "rchar") - rchar0;
  EXPECT_LT(copied, 33ll << 20) << "lb read " << copied << " bytes through user space";
  // The connection carries on, spliced bodies behind it.
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=1000", "x-key: k\r\n")));
  auto next = readHttpResponse(c, false, 10s);
  ASSERT_TRUE(next.ok) << next.error;
  EXPECT_EQ(next.body.size(), 1000u);
}

TEST_F(HttpSpliceBodyTest, AClientThatLeavesMidUploadClosesTheBackendConnection) {
  ASSERT_TRUE(startWithOrigin());
  ASSERT_TRUE(c.send(post(64 << 20) + noise(4 << 20, 3), 10s));
  ASSERT_TRUE(c.readUntil("\r\n\r\n", 5s));   // the echo's head: the exchange is under way
  ASSERT_TRUE(originConnections(h.originPort("a"), 1));
  c.close();   // mid-body
  EXPECT_TRUE(originConnections(h.originPort("a"), 0))
      << "lb kept the backend connection of an abandoned upload";
  TcpClient again;
  ASSERT_TRUE(again.connect(h.port()));
  ASSERT_TRUE(again.send(httpRequest("GET", "/bytes?n=300000", "x-key: k\r\n")));
  auto r = readHttpResponse(again, false, 10s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body.size(), 300000u);
}

TEST_F(HttpSpliceBodyTest, AClientThatLeavesMidDownloadClosesTheBackendConnection) {
  ASSERT_TRUE(startWithOrigin());
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=1073741824", "x-key: k\r\n")));
  ASSERT_TRUE(c.readAtLeast(4 << 20, 10s));
  c.close();   // mid-body
  EXPECT_TRUE(originConnections(h.originPort("a"), 0))
      << "lb kept the backend connection of an abandoned download";
}

TEST_F(HttpSpliceBodyTest, TheIdleTimeoutEndsAStalledSplicedUpload) {
  ASSERT_TRUE(startWithOrigin(SpliceLb().idle("1s")));
  ASSERT_TRUE(c.send(post(8 << 20) + noise(1 << 20, 5), 10s));   // then nothing
  auto t0 = Clock::now();
  ASSERT_TRUE(c.waitClosed(6s)) << "a stalled spliced upload was never timed out";
  auto took = Clock::now() - t0;
  EXPECT_LT(took, 4s);
  EXPECT_TRUE(originConnections(h.originPort("a"), 0));
}

TEST_F(HttpSpliceBodyTest, TenThousandSplicedRequestsLeaveNoDescriptorOrPipeBehind) {
  ASSERT_TRUE(startWithOrigin());
  c.close();   // each connection below is its own
  const std::string get = httpRequest("GET", "/bytes?n=300000", "x-key: k\r\n");
  const std::string up = noise(300000, 9);
  // 100 connections of 100 requests, every tenth an upload: each connection's two sockets
  // and every pump's duplicates and pipes come and go.
  auto connection = [&](int requests) {
    TcpClient one;
    if (!one.connect(h.port())) return false;
    for (int i = 0; i < requests; ++i) {
      if (i % 10 == 9) {
        auto r = postAndRead(one, up);
        if (!r.ok || r.body != up) return false;
      } else {
        if (!one.send(get)) return false;
        auto r = readHttpResponse(one, false, 10s);
        if (!r.ok || r.body.size() != 300000) return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(connection(20));   // the pipe pool is warm
  auto settled = [&](int limit) {
    int n = fdCount(h.lb().pid());
    for (auto end = Clock::now() + 5s; n > limit && Clock::now() < end;
         n = fdCount(h.lb().pid()))
      std::this_thread::sleep_for(20ms);
    return n;
  };
  const int before = settled(0);
  ASSERT_GT(before, 0);
  for (int i = 0; i < leakRounds(100); ++i) ASSERT_TRUE(connection(100)) << "connection " << i;
  EXPECT_EQ(settled(before), before);
}

TEST_F(HttpSpliceBodyTest, AnUpgradedConnectionIsSplicedBothWaysAndArrivesIdentical) {
  ASSERT_TRUE(startWithOrigin());
  ASSERT_TRUE(c.send("GET /ws HTTP/1.1\r\nHost: x\r\nx-key: k\r\nConnection: Upgrade\r\n"
                     "Upgrade: websocket\r\n\r\n"));
  auto r = readHttpResponse(c, false, 5s);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.status, 101);
  c.buffer().clear();
  const long long rchar0 = procIo(h.lb().pid(), "rchar");
  // lb-origin echoes every byte after the upgrade: 16 MiB out on a thread, the same back.
  const std::string bytes = noise(16 << 20, 13);
  bool sent = false;
  std::thread t([&] {
    size_t at = 0;
    while (at < bytes.size()) {
      ssize_t k = ::send(c.fd(), bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (k > 0) {
        at += static_cast<size_t>(k);
        continue;
      }
      pollfd p{c.fd(), POLLOUT, 0};
      if (k < 0 && (errno == EAGAIN || errno == EINTR) && ::poll(&p, 1, 10000) > 0) continue;
      break;
    }
    sent = at == bytes.size();
  });
  const bool got = c.readAtLeast(bytes.size(), 30s);
  t.join();
  ASSERT_TRUE(sent);
  ASSERT_TRUE(got) << c.buffer().size() << " bytes came back";
  EXPECT_TRUE(c.buffer() == bytes) << "the tunnel's echo differs";
  const long long copied = procIo(h.lb().pid(), "rchar") - rchar0;
  EXPECT_LT(copied, 1ll << 20) << "lb read " << copied << " tunnel bytes through user space";
  c.close();
  EXPECT_TRUE(originConnections(h.originPort("a"), 0)) << "the tunnel's backend side stayed open";
}

TEST_F(HttpSpliceBodyTest, AGibibyteDownloadThroughAReaderThatStopsKeepsLbFlat) {
  ASSERT_TRUE(startWithOrigin());
  constexpr uint64_t kBytes = 1ull << 30;
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=" + std::to_string(kBytes), "x-key: k\r\n")));
  ASSERT_TRUE(c.readUntil("\r\n\r\n", 5s));
  std::string head = c.buffer().substr(0, c.buffer().find("\r\n\r\n") + 4);
  std::string first = c.buffer().substr(head.size());
  // Every body byte is checked against lb-origin's pattern as it comes, never held whole.
  uint64_t got = 0;
  bool same = true;
  auto check = [&](const char* p, size_t n) {
    for (size_t i = 0; i < n && same; ++i)
      same = p[i] == "0123456789abcdef"[(got + i) % 16];
    got += n;
  };
  check(first.data(), first.size());
  std::vector<char> buf(1 << 20);
  auto readUpTo = [&](uint64_t until) {
    while (got < until) {
      pollfd p{c.fd(), POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) return false;
      ssize_t k = ::recv(c.fd(), buf.data(), std::min<uint64_t>(buf.size(), until - got), 0);
      if (k <= 0) return false;
      check(buf.data(), static_cast<size_t>(k));
    }
    return true;
  };
  ASSERT_TRUE(readUpTo(16 << 20));
  // The reader stops: the origin keeps sending until every buffer on the way is full, and
  // lb's own memory must not grow with what it would send.
  std::this_thread::sleep_for(300ms);
  const long rss_stopped = h.lbStatusKib("VmRSS");
  long rss_max = rss_stopped;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(100ms);
    rss_max = std::max(rss_max, h.lbStatusKib("VmRSS"));
  }
  EXPECT_LT(rss_max - rss_stopped, 4096) << "lb grew by " << rss_max - rss_stopped << " KiB";
  ASSERT_TRUE(readUpTo(kBytes)) << got << " bytes";
  EXPECT_TRUE(same) << "the body differs from the pattern";
}

TEST_F(HttpSpliceBodyTest, ASlowWriterUploadArrivesIdentical) {
  ASSERT_TRUE(startWithOrigin());
  const std::string body = noise(1 << 20, 17);
  ASSERT_TRUE(c.send(post(body.size()) + body.substr(0, 1000)));
  // 200 writes with pauses: each a separate small splice on lb's side.
  size_t at = 1000;
  for (int i = 0; at < body.size(); ++i) {
    size_t n = std::min(body.size() - at, size_t{1} + static_cast<size_t>(i) * 97 % 12000);
    ASSERT_TRUE(c.send(std::string_view(body).substr(at, n)));
    at += n;
    if (i < 200) std::this_thread::sleep_for(2ms);
  }
  auto r = readHttpResponse(c, false, 20s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.body == body) << "the echo differs (" << r.body.size() << " bytes)";
}

// Installs, on the calling thread only (and what it forks from now on), a filter that makes
// every splice(2) fail with `err`: a kernel that cannot splice these descriptors.
bool refuseSplice(int err) {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_splice, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<unsigned>(err) & 0xffff)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

class HttpSpliceRefusedTest : public ::testing::TestWithParam<int> {};

TEST_P(HttpSpliceRefusedTest, TheCopyPathCarriesEveryBodyWhenTheKernelRefusesSplice) {
  ProxyHarness h;
  std::string why;
  ASSERT_TRUE(h.startOrigin("a", &why)) << why;
  // lb is forked from a thread of its own, which alone carries the filter. The thread lives
  // as long as lb: the child dies with the thread that forked it (PR_SET_PDEATHSIG).
  bool filtered = false, up = false;
  std::promise<void> started, finished;
  std::thread t([&] {
    filtered = refuseSplice(GetParam());
    if (filtered) up = h.startLb(SpliceLb().config(h.originPort("a")), &why);
    started.set_value();
    finished.get_future().wait();
  });
  struct Release {
    std::promise<void>& p;
    std::thread& t;
    ~Release() {
      p.set_value();
      t.join();
    }
  } release{finished, t};
  started.get_future().wait();
  if (!filtered) GTEST_SKIP() << "seccomp filters are not available here";
  ASSERT_TRUE(up) << why;
  TcpClient c;
  ASSERT_TRUE(c.connect(h.port()));
  const long long rchar0 = procIo(h.lb().pid(), "rchar");
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=4194304", "x-key: k\r\n")));
  auto down = readHttpResponse(c, false, 20s);
  ASSERT_TRUE(down.ok) << down.error;
  ASSERT_EQ(down.body.size(), 4194304u);
  for (size_t i = 0; i < down.body.size(); ++i)
    ASSERT_EQ(down.body[i], "0123456789abcdef"[i % 16]) << "byte " << i;
  const std::string body = noise(4 << 20, 11);
  auto echo = postAndRead(c, body);
  ASSERT_TRUE(echo.ok) << echo.error;
  EXPECT_TRUE(echo.body == body);
  EXPECT_TRUE(echo.keep_alive);
  // Every body byte went through user space: the copy path carried them.
  EXPECT_GE(procIo(h.lb().pid(), "rchar") - rchar0, 12ll << 20);
  EXPECT_EQ(h.lb().stop(15, 10s), std::optional<int>(0)) << h.lb().output();
}

INSTANTIATE_TEST_SUITE_P(Errors, HttpSpliceRefusedTest, ::testing::Values(ENOSYS, EINVAL),
                         [](const auto& info) {
                           return std::string(info.param == ENOSYS ? "ENOSYS" : "EINVAL");
                         });

}  // namespace
}  // namespace lb::test
