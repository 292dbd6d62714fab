// Trailers both ways through lb's HTTP/2 edge (RFC 9113 §8.1), with python3-h2 as the client
// and a RecordingOrigin as the one backend, so the bytes lb sent up are seen as sent:
// - request trailers go up at the end of a chunked body (the request had no content-length);
// - a chunked response's trailers come down as the stream's last HEADERS, which ends it,
//   their names lowercased, the fields HTTP/2 may not carry dropped;
// - a trailer section lb cannot hold (past its field count) ends the stream in RST_STREAM,
//   never in a part of it passed for the whole.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"
#include "tests/support/recording_origin.h"
#include "tests/support/repo_file.h"

namespace lb::test {
namespace {

using json = nlohmann::json;

class H2TrailersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(origin_.ok());
    port_ = freePort();
    const uint16_t admin = freePort();
    ASSERT_TRUE(lb_.start("[lb]\nworkers = 1\n[admin]\nlisten = \"127.0.0.1:" +
                              std::to_string(admin) +
                              "\"\n[listeners.web]\nprotocol = \"http\"\ncluster = \"c\"\n"
                              "listen = \"127.0.0.1:" + std::to_string(port_) +
                              "\"\n[clusters.c]\nbackends = [ { name = \"o\", address = \"" +
                              origin_.address() + "\" } ]\n",
                          {port_, admin}))
        << lb_.output();
  }

  json trailers(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/python3", repoFile("tests/support/h2_probe.py"),
                                     std::to_string(port_), "trailers"};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = runCommand(argv, 30s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  RecordingOrigin origin_;
  LbProcess lb_;
  uint16_t port_ = 0;
};

TEST_F(H2TrailersTest, RequestTrailersGoUpAtTheEndOfAChunkedBody) {
  auto mark = origin_.mark();
  json j = trailers({"hello", "x-checksum=abc", "x-count=5"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j.at("status"), 200) << j.dump();
  const std::string up = origin_.receivedSince(mark);
  EXPECT_NE(up.find("transfer-encoding: chunked\r\n"), std::string::npos) << up;
  EXPECT_NE(up.find("\r\n\r\n5\r\nhello\r\n0\r\nx-checksum: abc\r\nx-count: 5\r\n\r\n"),
            std::string::npos)
      << up;
}

TEST_F(H2TrailersTest, ResponseTrailersEndTheStreamAsItsLastHeaders) {
  origin_.setResponse(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Grpc-Status, X-Sum\r\n\r\n"
      "2\r\nok\r\n0\r\nGrpc-Status: 0\r\nX-Sum: 7  \r\nContent-Length: 2\r\n"
      "Connection: close\r\n\r\n");
  json j = trailers({"hi"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j.at("status"), 200) << j.dump();
  EXPECT_EQ(j.at("body"), "ok") << j.dump();
  EXPECT_TRUE(j.at("ended")) << j.dump();
  // Lowercase, the value's trailing whitespace gone, framing and connection fields dropped.
  EXPECT_EQ(j.at("trailers"), json::parse(R"([["grpc-status", "0"], ["x-sum", "7"]])"))
      << j.dump();
}

TEST_F(H2TrailersTest, AResponseWithoutTrailersEndsOnItsData) {
  origin_.setResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
  json j = trailers({"hi"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j.at("body"), "ok") << j.dump();
  EXPECT_TRUE(j.at("ended")) << j.dump();
  EXPECT_TRUE(j.at("trailers").is_null()) << j.dump();
}

TEST_F(H2TrailersTest, TrailersPastWhatLbHoldsResetTheStream) {
  std::string many;
  for (int i = 0; i < 40; ++i) many += "X-T" + std::to_string(i) + ": v\r\n";
  origin_.setResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n" +
                      many + "\r\n");
  json j = trailers({"hi"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j.at("trailers").is_null()) << j.dump();
  EXPECT_FALSE(j.at("ended")) << j.dump();
  EXPECT_EQ(j.at("reset"), 2) << "INTERNAL_ERROR; " << j.dump();
}

}  // namespace
}  // namespace lb::test
