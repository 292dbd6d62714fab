// AccessLog: the line format, the escaping that keeps one record on one line, buffering
// (nothing written per request), and what happens when the buffer fills.
#include "lb/runtime/access_log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cctype>
#include <sstream>

#include <gtest/gtest.h>

namespace lb {
namespace {

class AccessLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    char tmpl[] = "/tmp/lb-access-log-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = tmpl;
    std::string err;
    sink_ = AccessLogSink::open(path_, &err);
    ASSERT_TRUE(sink_) << err;
    uv_ip4_addr("127.0.0.1", 40123, &client_);
  }
  void TearDown() override {
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
    unlink(path_.c_str());
  }
  // close() then let the loop deliver the timer's close callback (the log must outlive it).
  void finish(AccessLog& log) {
    log.close();
    uv_run(&loop_, UV_RUN_DEFAULT);
  }
  std::string contents() {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  AccessRecord tcpRecord() {
    AccessRecord r;
    r.listener = "memcache";
    r.client = reinterpret_cast<const sockaddr*>(&client_);
    r.has_key = true;
    r.key_hash = 0x9f3c2a0b11d4e6f7ull;
    r.backend = "mc-a";
    r.outcome = "ok";
    r.bytes_in = 12;
    r.bytes_out = 34;
    r.duration_us = 1234;
    return r;
  }

  uv_loop_t loop_;
  std::string path_;
  std::shared_ptr<AccessLogSink> sink_;
  sockaddr_in client_;
};

TEST_F(AccessLogTest, TcpLineCarriesEveryField) {
  AccessLog log(&loop_, sink_);
  log.write(tcpRecord());
  finish(log);
  // ts=YYYY-MM-DDTHH:MM:SS.mmmZ, then the fields in their fixed order.
  std::string s = contents();
  ASSERT_GT(s.size(), 28u) << s;
  EXPECT_EQ(s.substr(0, 3), "ts=") << s;
  for (size_t i : {3, 4, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 23, 24, 25})
    EXPECT_TRUE(isdigit(static_cast<unsigned char>(s[i]))) << i << ": " << s;
  EXPECT_EQ(s[13], 'T') << s;
  EXPECT_EQ(s[26], 'Z') << s;
  EXPECT_EQ(s.substr(27),
            " listener=memcache proto=tcp client=127.0.0.1:40123 key=9f3c2a0b11d4e6f7 "
            "backend=mc-a status=ok bytes_in=12 bytes_out=34 duration_ms=1.234\n");
}

TEST_F(AccessLogTest, HttpLineHasStatusMethodAndQuotedPath) {
  AccessLog log(&loop_, sink_);
  AccessRecord r = tcpRecord();
  r.http = true;
  r.status = 200;
  r.has_key = false;
  r.backend = "";
  r.method = "GET";
  r.path = "/a b\"c";
  log.write(r);
  finish(log);
  std::string s = contents();
  EXPECT_NE(s.find(" key=- backend=- status=200 "), std::string::npos) << s;
  EXPECT_NE(s.find(" method=GET path=\"/a b\\\"c\"\n"), std::string::npos) << s;
}

TEST_F(AccessLogTest, ControlBytesInAPathCannotStartAFakeLine) {
  AccessLog log(&loop_, sink_);
  AccessRecord r = tcpRecord();
  r.http = true;
  r.method = "GET";
  r.path = "/x\nts=forged";
  log.write(r);
  finish(log);
  std::string s = contents();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1) << s;
  EXPECT_NE(s.find("/x\\x0ats=forged"), std::string::npos) << s;
}

TEST_F(AccessLogTest, LinesStayInMemoryUntilAFlush) {
  AccessLog log(&loop_, sink_);
  for (int i = 0; i < 10; ++i) log.write(tcpRecord());
  EXPECT_EQ(contents(), "") << "a write per request would block the worker";
  log.flush();
  uv_run(&loop_, UV_RUN_DEFAULT);   // returns once the write is done: the timer is unref'd
  std::string s = contents();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 10);
  finish(log);
}

TEST_F(AccessLogTest, CloseWritesWhatIsStillBuffered) {
  AccessLog log(&loop_, sink_);
  for (int i = 0; i < 3; ++i) log.write(tcpRecord());
  finish(log);
  std::string s = contents();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);
}

TEST_F(AccessLogTest, AFullBufferIsHandedOffAndLinesBeyondBothBuffersAreDroppedAndCounted) {
  // Two 1 KiB buffers, no loop turn in between: the first fills and goes to the thread pool,
  // the second fills, and the rest are dropped rather than blocking.
  AccessLog log(&loop_, sink_, 1024);
  for (int i = 0; i < 100; ++i) log.write(tcpRecord());
  EXPECT_GT(log.linesDropped(), 0u);
  EXPECT_EQ(log.linesWritten() + log.linesDropped(), 100u);
  uv_run(&loop_, UV_RUN_DEFAULT);   // the write in flight completes
  finish(log);
  std::string s = contents();
  EXPECT_EQ(static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n')), log.linesWritten());
}

TEST_F(AccessLogTest, OffWritesNothing) {
  std::string err;
  auto none = AccessLogSink::open("", &err);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(err, "");
  AccessLog log(&loop_, none);
  EXPECT_FALSE(log.enabled());
  log.write(tcpRecord());
  finish(log);
  EXPECT_EQ(log.linesWritten(), 0u);
}

TEST(AccessLogSinkTest, UnopenablePathIsAnError) {
  std::string err;
  EXPECT_EQ(AccessLogSink::open("/nonexistent-dir/x.log", &err), nullptr);
  EXPECT_NE(err.find("/nonexistent-dir/x.log"), std::string::npos) << err;
}

}  // namespace
}  // namespace lb
