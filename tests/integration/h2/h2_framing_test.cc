// How a message's framing crosses lb's HTTP/2 edge (RFC 9113 §8.1), with python3-h2 (or raw
// frames) as the client and a RecordingOrigin as the one backend, so the bytes lb sent up
// are seen as sent, and it answers only a request it could frame whole:
// - request trailers go up at the end of a chunked body (the request had no content-length);
// - a chunked response's trailers come down as the stream's last HEADERS, which ends it,
//   their names lowercased, the fields HTTP/2 may not carry dropped;
// - a trailer section lb cannot hold (past its field count) ends the stream in RST_STREAM,
//   never in a part of it passed for the whole;
// - a content-length body the client's later frames contradict (a DATA frame past it, or
//   END_STREAM short of it) is reset, and the backend never holds a whole request: lb keeps
//   the declared body's last byte until END_STREAM.
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

class H2FramingTest : public ::testing::Test {
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

  json probe(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/python3", repoFile("tests/support/h2_probe.py"),
                                     std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = runCommand(argv, 30s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
  json trailers(std::vector<std::string> args) {
    args.insert(args.begin(), "trailers");
    return probe(args);
  }

  RecordingOrigin origin_;
  LbProcess lb_;
  uint16_t port_ = 0;
};

TEST_F(H2FramingTest, RequestTrailersGoUpAtTheEndOfAChunkedBody) {
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

TEST_F(H2FramingTest, ResponseTrailersEndTheStreamAsItsLastHeaders) {
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

TEST_F(H2FramingTest, AResponseWithoutTrailersEndsOnItsData) {
  origin_.setResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
  json j = trailers({"hi"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j.at("body"), "ok") << j.dump();
  EXPECT_TRUE(j.at("ended")) << j.dump();
  EXPECT_TRUE(j.at("trailers").is_null()) << j.dump();
}

TEST_F(H2FramingTest, TrailersPastWhatLbHoldsResetTheStream) {
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

// The head and "hello" (all 5 declared bytes) in one write, then a DATA frame past them: the
// backend has the head and "hell", never the whole body it would answer.
TEST_F(H2FramingTest, ADataFramePastTheContentLengthNeverCompletesTheRequestUpstream) {
  auto mark = origin_.mark();
  json j = probe({"malformed", "content_length_over"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["rst"]["1"], 1) << "PROTOCOL_ERROR; " << j.dump();
  EXPECT_TRUE(j["status"].empty()) << j.dump();
  const std::string up = origin_.receivedSince(mark);
  EXPECT_NE(up.find("content-length: 5\r\n"), std::string::npos) << up;
  EXPECT_EQ(up.find("hello"), std::string::npos) << up;
  EXPECT_NE(up.find("\r\n\r\nhell"), std::string::npos) << up;
}

TEST_F(H2FramingTest, EndStreamShortOfTheContentLengthNeverCompletesTheRequestUpstream) {
  auto mark = origin_.mark();
  json j = probe({"malformed", "content_length_short_late"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["rst"]["1"], 1) << "PROTOCOL_ERROR; " << j.dump();
  EXPECT_TRUE(j["status"].empty()) << j.dump();
  const std::string up = origin_.receivedSince(mark);
  EXPECT_EQ(up.find("\r\n\r\nhel"), up.size() - 7) << "the 3 bytes sent, no more: " << up;
}

// The same body whole, END_STREAM on its last DATA: nothing held back past the frame, one
// request up, answered.
TEST_F(H2FramingTest, AContentLengthBodyThatMatchesGoesUpWhole) {
  auto mark = origin_.mark();
  json j = probe({"malformed", "content_length_exact"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["status"]["1"], 200) << j.dump();
  EXPECT_TRUE(j["rst"].empty()) << j.dump();
  const std::string up = origin_.receivedSince(mark);
  EXPECT_EQ(up.substr(up.size() - 9), "\r\n\r\nhello") << up;
}

}  // namespace
}  // namespace lb::test
